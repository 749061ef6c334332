"""`ta.saved_model`: save the ta.functions of an object as exported programs, load them without the source.

    ta.saved_model.save(model, "exported/")      # every concrete function, weights once
    loaded = ta.saved_model.load("exported/")     # in any process: torch and torch_autograph only
    loaded.predict(x)                             # dispatches to the saved signature x matches

The format is a directory (see `save.py`): `torch.export` programs (`.pt2`),
one `variables.pt`, and a JSON description of the functions' arguments and
results.
"""

from .load import Loaded, LoadedFunction, load
from .save import save

__all__ = ["Loaded", "LoadedFunction", "load", "save"]
