"""Python side of kbserve (docs/kbserve-python.md): the client of its HTTP
API, a Ray deployment with one server per node, and adapters for veRL,
OpenRLHF and OpenEnv.

Only the client is imported here; ``kbserve.ray_pool`` needs Ray and each
``kbserve.adapters.*`` module its engine.
"""

from .client import (AsyncClient, AsyncSession, Client, Event, Session, evaluation_request, parse_metrics,
                     read_solution)
from .errors import (BadRequest, Conflict, KbserveError, NotFound, PayloadTooLarge, RetryExhausted, ServerError,
                     ServerExited, Unauthorized, Unprocessable, WaitTimeout)
from .server import LocalServer, find_binary

__version__ = "0.1.0"

__all__ = ["AsyncClient", "AsyncSession", "Client", "Event", "Session", "evaluation_request", "parse_metrics",
           "read_solution", "LocalServer", "find_binary", "KbserveError", "ServerError", "BadRequest",
           "Unauthorized", "NotFound", "Conflict", "PayloadTooLarge", "Unprocessable", "RetryExhausted",
           "WaitTimeout", "ServerExited", "__version__"]
