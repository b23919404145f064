"""Attacks a curious server can mount on what it receives (evaluation instruments)."""

from fedrec.attacks.top_guess import TopGuessAttack, top_guess

__all__ = ["TopGuessAttack", "top_guess"]
