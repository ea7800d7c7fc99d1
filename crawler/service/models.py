"""The shapes of the API's requests and answers, as pydantic models: FastAPI builds the
OpenAPI document (``/openapi.json``) from them. The requests' own checks, with messages
naming the bad part, are :mod:`crawler.service.spec`'s; these describe the same shapes."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from crawler.service.spec import ALLOWED_SETTINGS

_NUMBER = Annotated[float, Field(ge=0)]
_SETTING_TYPES: dict[str, Any] = {"bool": bool, "int": Annotated[int, Field(ge=0)], "number": _NUMBER,
                                   "numbers": Annotated[list[_NUMBER], Field(min_length=1)]}
# The settings a crawl may set, each of its type: the model of ALLOWED_SETTINGS.
CrawlSettings = create_model("CrawlSettings", __config__=ConfigDict(extra="forbid"),
                             **{name: (_SETTING_TYPES[kind], None)
                                for name, kind in ALLOWED_SETTINGS.items()})  # type: ignore[call-overload]


class CrawlRequest(BaseModel):
    """``POST /crawls``: seeds (http or https URLs), and optionally scope, max pages and settings."""

    model_config = ConfigDict(extra="forbid")
    seeds: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1, description="http(s) URLs")
    scope: Literal["host", "domain", "any"] | None = Field(None, description="the spider's scope argument")
    max_pages: int | None = Field(None, ge=0)
    settings: CrawlSettings = Field(default_factory=dict)  # type: ignore[valid-type]


class EmptyBody(BaseModel):
    """A state-changing request with nothing to say: ``{}`` (its JSON type is what counts)."""

    model_config = ConfigDict(extra="forbid")


class RequeueRequest(BaseModel):
    """``POST /crawls/{id}/dead_letters/requeue``: the URLs to queue again; absent: all."""

    model_config = ConfigDict(extra="forbid")
    urls: list[str] | None = None


class Error(BaseModel):
    error: str


class Created(BaseModel):
    crawl_id: str
    state: str


class CrawlView(BaseModel):
    crawl_id: str
    state: str
    backend: str
    fetched: int
    failed: int
    queued: int
    stored: int
    dead_letters: int
    leased: int
    waiting: int
    seen: int
    hosts_active: int
    seeds: list[str]
    scope: str
    max_pages: int | None
    settings: dict[str, str]
    created_at: str | None
    started_at: str | None
    finished_at: str | None
    exit_status: int | None
    error: str | None
    elapsed: float | None


class CrawlList(BaseModel):
    crawls: list[CrawlView]


class Activity(BaseModel):
    crawl_id: str
    samples: list[dict[str, float]]
    stats: dict[str, Any]
    bound: dict[str, str] | None
    hosts: list[dict[str, Any]]
    dead_letters: list[dict[str, Any]]
    errors: list[str]
    log: list[str]


class Requeued(BaseModel):
    requeued: int


def request_body(model: type[BaseModel], required: bool = True) -> dict:
    """The ``requestBody`` of an operation whose body :func:`read_body` reads itself."""
    return {"requestBody": {"required": required,
                            "content": {"application/json": {"schema": inline_schema(model)}}}}


def inline_schema(model: type[BaseModel]) -> dict:
    """The model's JSON schema with its ``$defs`` put in place (none is recursive): its
    ``#/$defs/...`` references would not resolve inside the OpenAPI document."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return resolve(defs[node["$ref"].rsplit("/", 1)[1]])
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(value) for value in node]
        return node

    return resolve(schema)
