from tests.llm.offline_fixture import offline_provider, offline_provider_url

__all__ = ["offline_provider", "offline_provider_url"]
