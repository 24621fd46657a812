"""Parts of an answer whose keys stand in the answer's own JSON, where the
part's field stands (see :mod:`memvault.store.answers.browse`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from memvault.store.answers import AnswerError, _Answer

F = TypeVar("F", bound="_Flat")


@dataclass(frozen=True)
class _Part(_Answer):
    """Keys that an answer has all together or not at all, spliced into it (see :class:`_Flat`)."""

    #: The key whose presence in JSON means the part is there.
    KEY: ClassVar[str] = ""


@dataclass(frozen=True)
class _Flat(_Answer):
    """An answer whose :attr:`FLAT` fields are parts whose keys stand in its
    own JSON, where the field stands (a turn's keys after a read's links):
    the shape ``show`` and ``read`` have always printed."""

    #: Fields holding a :class:`_Part` (its type), spliced in; left out when None.
    FLAT: ClassVar[dict[str, type[_Part]]] = {}

    def to_json(self) -> dict[str, Any]:
        """JSON values, each part's keys in the part's place (a key already
        there keeps its place and takes the part's value)."""
        out: dict[str, Any] = {}
        for key, value in super().to_json().items():
            if key in self.FLAT:
                out.update(value.to_json())
            else:
                out[key] = value
        return out

    @classmethod
    def from_json(cls: type[F], data: object) -> F:
        """The answer ``data`` (from :meth:`to_json`) describes, its parts
        gathered back; raises :class:`AnswerError` as :meth:`_Answer.from_json`."""
        if not isinstance(data, Mapping):
            raise AnswerError(f"{cls.__name__}: not a JSON object")
        values = dict(data)
        for name, kind in cls.FLAT.items():
            if kind.KEY in values:
                keys = [f.name for f in dataclasses.fields(kind)]
                values[name] = kind.from_json({k: values.pop(k) for k in keys if k in values})
        return super().from_json(values)
