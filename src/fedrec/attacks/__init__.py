"""Attacks a curious server can mount on what it receives (evaluation instruments)."""

from fedrec.attacks.attribute_inference import AttributeInferenceAttack
from fedrec.attacks.cross_round import CrossRoundAttack
from fedrec.attacks.cross_upload import CrossUploadAttack
from fedrec.attacks.malicious_view import MaliciousViewAttack, NullUpdates
from fedrec.attacks.rated_items import RatedItemsAttack, guess_rated_items
from fedrec.attacks.top_guess import TopGuessAttack, top_guess

__all__ = [
    "AttributeInferenceAttack", "CrossRoundAttack", "CrossUploadAttack", "MaliciousViewAttack",
    "NullUpdates", "RatedItemsAttack", "TopGuessAttack",
    "guess_rated_items", "top_guess",
]
