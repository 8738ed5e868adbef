"""What a FastAPI app of the tests received, by (method, route template, status): the ground truth of
the importers' tests (openapi_app.py, postman_app.py, har_app.py). `count_requests(app)` adds the
counting middleware and GET /__counts ([[method, route template, status, count], ...]; the app's own
/__ routes are not counted) and returns the counter."""

import collections

from starlette.routing import Match


def count_requests(app) -> collections.Counter:
    counts: collections.Counter = collections.Counter()

    @app.middleware("http")
    async def count(request, call_next):
        response = await call_next(request)
        template = request.url.path
        for route in app.routes:
            matched, _ = route.matches(request.scope)
            if matched == Match.FULL:
                template = route.path
                break
        if not template.startswith("/__"):
            counts[(request.method, template, response.status_code)] += 1
        return response

    @app.get("/__counts", include_in_schema=False)
    def get_counts():
        return [[m, p, s, n] for (m, p, s), n in sorted(counts.items())]

    return counts
