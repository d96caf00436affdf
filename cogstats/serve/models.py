"""The service's bodies and answers, as pydantic models: the OpenAPI schema clients read.

The request models check the shape of a body only (an object, its required fields, no
unknown field): every value is then checked by the ledger's validator
(:func:`cogstats.store.core.run_content`), so that a bad value is answered with the
ledger's message, the same as the command line's.  Their JSON schema says what each field
must hold (``WithJsonSchema``), so that clients generated from ``/openapi.json`` are typed.

Examples
--------
>>> RunIn.model_validate({"run_id": "r1", "score": 0.5}).fact_ids
[]
>>> sorted(RunIn.model_json_schema()["required"])
['run_id', 'score']
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

__all__ = [
    "BODY_FIELDS",
    "MAX_ID_LENGTH",
    "Change",
    "ErrorItem",
    "ErrorOut",
    "Event",
    "Health",
    "LessonIn",
    "LessonRow",
    "RunIn",
    "RunOut",
    "SelectIn",
    "SelectionOut",
]

#: the longest run or lesson id the service takes (characters); the ledger sets no limit,
#: a service must (an id is stored in every run that lists it)
MAX_ID_LENGTH = 512

_ID = {"type": "string", "minLength": 1, "maxLength": MAX_ID_LENGTH}
_SCALAR = {"anyOf": [{"type": "number"}, {"type": "string"}, {"type": "boolean"}, {"type": "null"}]}


# Each field takes any JSON value (the ledger checks it) and is documented as below.
_IdValue = Annotated[Any, WithJsonSchema(_ID)]
_IdList = Annotated[Any, WithJsonSchema({"type": "array", "items": _ID})]
_Score = Annotated[Any, WithJsonSchema({"type": "number", "minimum": 0, "maximum": 1})]
_Text = Annotated[Any, WithJsonSchema({"type": ["string", "null"]})]
_Object = Annotated[Any, WithJsonSchema({"type": ["object", "null"], "additionalProperties": True})]
_Covariates = Annotated[
    Any, WithJsonSchema({"type": ["object", "null"], "additionalProperties": _SCALAR})
]
_Propensities = Annotated[
    Any,
    WithJsonSchema({"type": ["object", "null"], "additionalProperties": {"type": "number"}}),
]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LessonIn(_Body):
    """``POST /lessons``: a lesson to add as a candidate (a repeat is a no-op)."""

    id: _IdValue = Field(description="the lesson id, as in the ledger's fact_ids")
    family: _Text = Field(
        None, description="the lesson table's applies_to (a task family), or null"
    )


class SelectIn(_Body):
    """``POST /select``: the coming run's context (passed to the retrieval policy)."""

    context: _Object = Field(None, description='facts about the coming run, e.g. {"family": "web"}')


class RunIn(_Body):
    """``POST /runs``: one finished run: its id, its score, the lessons it carried."""

    run_id: _IdValue = Field(description="unique per run; a retry repeats it")
    score: _Score = Field(description="the run's score in [0, 1]")
    fact_ids: _IdList = Field(
        default_factory=list,
        description="the lessons injected into the run's prompt (whatever /select said)",
    )
    covariates: _Covariates = Field(
        None, description='per-run covariates, e.g. {"difficulty_proxy": 0.3}'
    )
    propensities: _Propensities = Field(
        None,
        description="the /select answer's propensities, logged with the run (the ledger's "
        "eligible_ids and propensities columns)",
    )
    context: _Object = Field(
        None,
        description="the context the run's /select was given; checked to be an object and "
        "not stored (what the estimators should see goes in covariates)",
    )


#: the fields each body takes (named in the answer to an unknown field)
BODY_FIELDS: dict[str, tuple[str, ...]] = {
    "/lessons": tuple(LessonIn.model_fields),
    "/select": tuple(SelectIn.model_fields),
    "/runs": tuple(RunIn.model_fields),
}


class Health(BaseModel):
    """``GET /health``."""

    status: str = Field(description='"ok"')
    runs: int = Field(description="distinct runs stored")
    lessons: int = Field(description="lessons the store holds")
    gate: str = Field(description="the gate's registry name")
    preset: str | None = Field(description="the preset's name, or null")
    version: str = Field(description="cogstats' version")


class LessonRow(BaseModel):
    """One lesson and what the store knows of it (``GET /lessons``, ``POST /lessons``)."""

    fact_id: str
    status: str = Field(description="candidate, admitted, verified, suspended, evicted, ...")
    since: int = Field(description="the run after which it took this status")
    trials: int = Field(description="runs that carried it")
    estimate: float | None = Field(description="the gate's last estimate of its effect")
    std_error: float | None
    t: float | None
    why: str | None = Field(description="the gate's last reason code")
    reason: str | None = Field(description="why it left the prompt, e.g. eval-gate:harmful")
    created_at: int | None
    family: str | None


class SelectionOut(BaseModel):
    """``POST /select``: the lessons for the coming run's prompt, in order."""

    fact_ids: list[str]
    propensities: dict[str, float] | None = Field(
        description="every eligible lesson's probability of injection, for randomised "
        "policies (send it back with the run); null otherwise"
    )


class Change(BaseModel):
    """One status change made by the gate's look after a run."""

    model_config = ConfigDict(populate_by_name=True)

    run: int = Field(description="the store's run number (1-based, in record order)")
    fact_id: str
    from_: str = Field(alias="from")
    to: str
    decision: str
    reason: str | None
    why: str | None


class RunOut(BaseModel):
    """``POST /runs``: the status changes the run's look made (the same for a retry)."""

    changes: list[Change]


class Event(Change):
    """One status event (``GET /events``), numbered from 1 in the order they happened."""

    event: int = Field(description="the event's number; poll with ?after=<the last one>")
    run_id: str


class ErrorItem(BaseModel):
    """What was wrong with a request: the field, the value it got, the message."""

    field: str | None = Field(description="the body field (or header, or query parameter)")
    got: str | None = Field(description="the value received (its repr, cut to 80 characters)")
    msg: str = Field(description="the message (the ledger's, for a run's values)")
    loc: list[str | int]
    type: str


class ErrorOut(BaseModel):
    """Every error answer: 401, 404, 409, 413, 422, 500, 503, 507."""

    detail: list[ErrorItem]
