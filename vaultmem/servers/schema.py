"""What the servers' schemas say: the MCP tools' argument types, and the REST API's
bodies and statuses.

Checking a request is the request model's (:mod:`vaultmem.model`), the same for every
door. These types add two things only:

- JSON's types kept apart: pydantic's strict mode, so ``true`` is no limit of 1 and
  ``"5"`` no number (Python counts a bool as an int; pydantic's lax mode converts);
- the model's rules written into the schema (the text pattern, ranges, enums, which
  fields go together), so that a client, or schemathesis, can tell from the schema alone
  which requests are valid. Written with ``json_schema_extra``: documented, not checked
  a second time.

:data:`STATUS` is the one table of the REST API's error statuses: its handlers answer
from it, and each route's documented responses are made of it (:func:`answers`), with
the guard's (:func:`guard_answers`).

Imported by the servers only: pydantic is no cost to any other command's start-up.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from vaultmem import api
from vaultmem.agent.surface import MAX_BUDGET, MIN_BUDGET, SurfaceRequest
from vaultmem.errors import (
    AmbiguousNote,
    ConfigError,
    ConflictError,
    EndpointError,
    IndexStateError,
    LockBusy,
    NoteError,
    NoteNotFound,
    RequestError,
    VaultmemError,
)
from vaultmem.model import (
    MAX_LIMIT,
    MAX_QUERY_CHARS,
    NONBLANK_PATTERN,
    ROUTES,
    SEARCH_MODES,
    TEXT_PATTERN,
    Filters,
    RememberRequest,
    SearchRequest,
    split_names,
)
from vaultmem.timeline import TimelineRequest
from vaultmem.vocabulary import NOTE_TYPES, SURFACE_PROFILES

# --- field types (both servers) -----------------------------------------------------------


def _json_integer(value: object) -> object:
    """``5.0`` as 5: JSON Schema's ``integer`` is any number with no fraction. Whatever
    else is no int stays as it is, for strict mode to refuse (``true``, ``"5"``, 2.5)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


Text = Annotated[str, Field(json_schema_extra={"pattern": TEXT_PATTERN})]
NonBlank = Annotated[str, Field(json_schema_extra={"pattern": NONBLANK_PATTERN})]
Count = Annotated[int, BeforeValidator(_json_integer), Field(strict=True)]
Switch = Annotated[bool, Field(strict=True)]

QueryText = Annotated[
    str, Field(json_schema_extra={"pattern": TEXT_PATTERN, "maxLength": MAX_QUERY_CHARS})
]
Mode = Annotated[str, Field(json_schema_extra={"enum": list(SEARCH_MODES)})]
Route = Annotated[str, Field(json_schema_extra={"enum": list(ROUTES)})]
NoteType = Annotated[str, Field(json_schema_extra={"enum": list(NOTE_TYPES)})]
Profile = Annotated[str, Field(json_schema_extra={"enum": list(SURFACE_PROFILES)})]
NoteNames = Annotated[list[Text], Field(json_schema_extra={"minItems": 1})]


def _limit(
    default: int | None, *, most: int | None = MAX_LIMIT, description: str | None = None
) -> Any:
    """A field checked by :func:`vaultmem.model.check_limit`, its range in the schema."""
    bounds: dict[str, Any] = {"minimum": 1} | ({} if most is None else {"maximum": most})
    return Field(default, description=description, json_schema_extra=bounds)


def _default(owner: Any, name: str) -> Any:
    """The default of field ``name`` of a dataclass or parameter of a function: the body
    models declare no default of their own."""
    if dataclasses.is_dataclass(owner):
        return next(f.default for f in dataclasses.fields(owner) if f.name == name)
    return inspect.signature(owner).parameters[name].default


def _one_given(*names: str, exactly: bool = False) -> dict[str, Any]:
    """Schema: at least one (``exactly``: exactly one) of ``names`` is given as text."""
    branches = [{"required": [n], "properties": {n: {"type": "string"}}} for n in names]
    return {"oneOf" if exactly else "anyOf": branches}


# --- REST bodies --------------------------------------------------------------------------


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)


class ErrorBody(BaseModel):
    """Every error's answer: the line the CLI prints after ``vaultmem: error:``."""

    model_config = ConfigDict(extra="forbid")

    error: str


class FiltersBody(_Body):
    """Restrictions of a search (all optional); forgotten/archived notes need ``status``."""

    folder: Text | None = None
    tag: Text | None = None
    type: Text | None = None
    status: Text | None = None
    collection: list[Text] | Text | None = Field(
        default=None, description='A configured collection, "a,b" or a list: notes in any of them.'
    )
    since: Text | None = Field(
        default=None,
        description="Notes created or last used since: an ISO date or datetime, or a time "
        "back from now (7d, 2w, 12h).",
    )
    until: Text | None = Field(
        default=None, description="Notes created or last used until (a bare date includes its day)."
    )

    def value(self) -> Filters:
        """As the core's :class:`~vaultmem.model.Filters`."""
        fields = self.model_dump(exclude={"collection"})
        return Filters(**fields, collections=split_names(self.collection, "collection"))


class SearchBody(_Body):
    """The fields of :class:`vaultmem.model.SearchRequest`; ``filters`` is an object."""

    query: QueryText = Field(description="A query with no letter or digit finds nothing.")
    mode: Mode = Field(
        _default(SearchRequest, "mode"),
        description=f"One of: {', '.join(SEARCH_MODES)} (search, vsearch, query).",
    )
    limit: Count = _limit(_default(SearchRequest, "limit"))
    filters: FiltersBody = FiltersBody()
    prior: bool = _default(SearchRequest, "prior")
    review: bool = _default(SearchRequest, "review")
    candidates: Count = _limit(_default(SearchRequest, "candidates"), description="hybrid only")
    intent: Text | None = Field(None, description="hybrid only")
    route: Route | None = Field(
        None, description="hybrid only: why, when, entity or what (null: from the question)"
    )
    expand: bool | None = Field(None, description="hybrid only; null: the vault's setting")
    rerank: bool = Field(_default(SearchRequest, "rerank"), description="hybrid only")

    def value(self) -> SearchRequest:
        """As the core's request (which validates it)."""
        fields = self.model_dump(exclude={"filters"})
        return SearchRequest(**fields, filters=self.filters.value())


class RememberBody(_Body):
    """A new memory (`vaultmem remember`); ``tags`` a list or ``"a, b"``."""

    text: NonBlank = Field(description="At least one word besides a heading and punctuation.")
    title: Text | None = None
    type: NoteType | None = Field(None, description="Case does not matter.")
    tags: list[Text] | Text = []
    folder: Text | None = Field(None, description="Inside the vault, relative to its root.")
    supersedes: Text | None = Field(None, description="The note it replaces: path, title or alias.")

    def value(self) -> RememberRequest:
        """As the core's request (which validates it)."""
        tags = (self.tags,) if isinstance(self.tags, str) else tuple(self.tags)
        return RememberRequest(self.text, self.title, self.type, tags, self.folder, self.supersedes)


class ReinforceBody(_Body):
    """Notes used just now: `touch`, or with ``tags`` (the context's) `observe`."""

    notes: NoteNames
    tags: list[Text] | Text = []


class FlagBody(_Body):
    """Notes to pin, unpin, forget, restore or unsnooze."""

    notes: NoteNames


class SnoozeBody(_Body):
    """Notes to snooze until a date, or for a while: exactly one of ``until`` and ``for``."""

    model_config = ConfigDict(json_schema_extra=_one_given("until", "for", exactly=True))

    notes: NoteNames
    until: Text | None = Field(None, description="An ISO date or datetime in the future.")
    for_: Text | None = Field(None, alias="for", description="A duration: 30d, 12h, 2w.")


class SimilarBody(_Body):
    """The notes closest in meaning to ``name`` (needs vectors: `vaultmem embed`)."""

    name: Text
    limit: Count = _limit(_default(api.similar, "limit"))
    filters: FiltersBody = FiltersBody()


_BUDGET_RANGE: dict[str, Any] = {"minimum": MIN_BUDGET, "maximum": MAX_BUDGET}


class SurfaceBody(_Body):
    """A prompt to surface context for (`vaultmem surface`)."""

    prompt: Text
    session: Text | None = None
    # The bounds on the integer branch of the union (the request checks them).
    budget: Annotated[Count, Field(json_schema_extra=_BUDGET_RANGE)] | None = Field(
        None, description="Tokens (chars / 4) the block may take (null: the profile's)."
    )
    vectors: bool | None = Field(None, description="null: when the vault has vectors")
    profile: Profile | None = Field(None, description="null: the vault's [hooks] profile.")

    def value(self) -> SurfaceRequest:
        """As the core's request (which validates it)."""
        return SurfaceRequest(
            self.prompt, self.session, self.budget, self.vectors, profile=self.profile
        )


class TimelineBody(_Body):
    """The fields of :class:`vaultmem.timeline.TimelineRequest`: a note, or since/until."""

    model_config = ConfigDict(json_schema_extra=_one_given("note", "since", "until"))

    note: NonBlank | None = Field(None, description="Path, title, alias or file name.")
    since: NonBlank | None = Field(None, description="ISO date or a duration back: 30d, 2w, 12h.")
    until: NonBlank | None = Field(None, description="ISO date (a bare date includes the day).")
    around: Text = Field(
        _default(TimelineRequest, "around"),
        description="With a note: also notes dated this close to it (0: none).",
    )
    newest_first: bool = _default(TimelineRequest, "newest_first")
    limit: Count | None = _limit(None, most=None, description="At most so many events (null: all).")

    def value(self) -> TimelineRequest:
        """As the core's request (which validates it)."""
        return TimelineRequest(**self.model_dump())


# --- REST statuses ------------------------------------------------------------------------

# Most specific first: a VaultmemError not listed is the server's own failure (500). The
# REST handlers answer from this table, and its OpenAPI document's responses are made of it.
STATUS: tuple[tuple[type[VaultmemError], int, str], ...] = (
    (RequestError, 422, "an invalid request: a field's value, or a body that is no JSON object"),
    (NoteError, 422, "a name outside the vault, or a note that cannot be read or written"),
    (NoteNotFound, 404, "no note answers to that name"),
    (AmbiguousNote, 409, "several notes answer to that name"),
    (IndexStateError, 409, "the vault is not indexed (`vaultmem index`) or its index is damaged"),
    (ConfigError, 409, "the vault cannot answer this as configured (no embedder)"),
    (LockBusy, 503, "another process holds the vault's lock"),
    (ConflictError, 503, "a note kept changing while it was written"),
    (EndpointError, 502, "an inference endpoint failed"),
)
# What the REST guard answers before any route runs (rest.Guard): every route can get these.
GUARD_STATUS: tuple[tuple[int, str], ...] = (
    (421, "the Host header does not name this server"),
    (403, "a cross-origin request: an Origin that is not this server"),
    (413, "a body larger than {max_body} bytes"),
)
_UNAUTHORIZED = "no bearer token, or the wrong one (Authorization: Bearer TOKEN)"
_HEADERS = {
    401: {"WWW-Authenticate": 'The scheme to answer with: Bearer realm="vaultmem".'},
    503: {"Retry-After": "Seconds to wait before trying again."},
}


def status_for(exc: VaultmemError) -> int:
    """The HTTP status a domain error answers with (:data:`STATUS`)."""
    return _row(type(exc))[0]


def _row(raised: type[VaultmemError]) -> tuple[int, str]:
    """The status and meaning of an error class: its first row in :data:`STATUS`."""
    found = (row[1:] for row in STATUS if issubclass(raised, row[0]))
    return next(found, (500, "the server failed (its log has the details)"))


def _response(code: int, meanings: Sequence[str]) -> dict[str, Any]:
    """One documented error response: the error body, and a header it always carries."""
    answer: dict[str, Any] = {"model": ErrorBody, "description": "; ".join(meanings)}
    if code in _HEADERS:
        answer["headers"] = {
            name: {"description": about, "required": True, "schema": {"type": "string"}}
            for name, about in _HEADERS[code].items()
        }
    return answer


def answers(*kinds: type[VaultmemError]) -> dict[int | str, dict[str, Any]]:
    """The error responses of a route that can raise ``kinds``, from :data:`STATUS`."""
    meanings: dict[int, list[str]] = {}
    for code, meaning in map(_row, kinds):
        if meaning not in meanings.setdefault(code, []):
            meanings[code].append(meaning)
    return {code: _response(code, meanings[code]) for code in sorted(meanings)}


def guard_answers(*, secured: bool, max_body: int) -> dict[int | str, dict[str, Any]]:
    """The guard's responses, which every route shares; 401 where a token is needed."""
    found = {code: [meaning.format(max_body=max_body)] for code, meaning in GUARD_STATUS}
    if secured:
        found[401] = [_UNAUTHORIZED]
    return {code: _response(code, meanings) for code, meanings in sorted(found.items())}
