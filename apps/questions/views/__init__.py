"""The question bank's pages, one module per stage; all of them for researchers only."""
