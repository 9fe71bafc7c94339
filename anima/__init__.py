"""anima: a persistent first-person self for LLM agents, kept in plain files."""

__version__ = "0.1.0"
