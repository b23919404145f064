"""fedrec: privacy-preserving federated recommendation and federated graph learning."""
__version__ = "0.1.0"
