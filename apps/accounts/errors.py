class AccountError(Exception):
    """A request about accounts that cannot be carried out, said so a person can read it."""
