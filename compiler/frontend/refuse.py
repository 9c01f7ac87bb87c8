"""What a lowering rule of the PyTorch front end raises: :class:`Refuse` (the node is refused,
for the reason given) or :class:`Upstream` (an operand was refused already, so the node stays
silent and the refusal is reported once, at its cause)."""


class Refuse(Exception):
    """Raised by a lowering rule: the node is refused, for the reason given."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


class Upstream(Exception):
    """Raised by a lowering rule: an operand was refused already, so stay silent."""
