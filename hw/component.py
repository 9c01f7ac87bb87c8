"""The base of GA-2's components: arguments checked before the component exists.

Amaranth warns about an ``Elaboratable`` that is created and never elaborated
(``UnusedElaboratable``, when it is garbage-collected). A component that refused its arguments
in ``__init__`` would be exactly that, and every refusal drew a spurious warning unless the
component silenced it through Amaranth's private ``_MustUse__silence``. :class:`Checked` runs
the checks in ``__new__``, before the object is made: a refused component never exists.
"""

from __future__ import annotations

from typing import Any

from amaranth.lib import wiring

from sim.spec import Params


def check_params(owner: str, params: Any) -> None:
    """Refuse anything but a :class:`sim.spec.Params`.

    Raises:
        TypeError: params is not a Params; the message names the owner and shows the value.
    """
    if not isinstance(params, Params):
        raise TypeError(f"{owner}: params={params!r} must be a sim.spec.Params")


class Checked(wiring.Component):
    """A ``wiring.Component`` whose constructor arguments are checked before it exists.

    :meth:`check` receives the constructor's arguments, before ``__init__`` and before the
    object is made, and raises on a bad one. The default takes the first argument (or the
    ``params`` keyword) as the machine's :class:`sim.spec.Params` and checks its type; a
    component with other arguments or other limits overrides it.
    """

    def __new__(cls, *args: Any, src_loc_at: int = 0, **kwargs: Any):
        cls.check(*args, **kwargs)
        return super().__new__(cls, *args, src_loc_at=src_loc_at + 1, **kwargs)

    @classmethod
    def check(cls, params: Any, *args: Any, **kwargs: Any) -> None:
        """Raise on arguments the component cannot be built from (default: TypeError for a
        params that is not a :class:`sim.spec.Params`)."""
        check_params(cls.__name__, params)
