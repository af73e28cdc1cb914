"""/docs: the OpenAPI document in Swagger UI.

The page shares the web UI's origin, so a script it runs could do whatever a signed-in user can
(make an admin key, say). Swagger UI is loaded from a CDN at one pinned version whose files'
digests the page names (Subresource Integrity): a file changed at the CDN is refused by the browser,
never run. The page's policy lets no other script run (its one inline script is allowed by digest),
lets it fetch only from this server, and lets no site frame it.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Final

from fastapi import FastAPI
from fastapi.responses import HTMLResponse

SWAGGER_UI: Final = "https://cdn.jsdelivr.net/npm/swagger-ui-dist@5.17.14"
"""The version the digests below are of (tests compare them with the npm package's files)."""
ASSETS: Final = {
    "swagger-ui-bundle.js": "sha384-wmyclcVGX/WhUkdkATwhaK1X1JtiNrr2EoYJ+diV3vj4v6OC5yCeSu+yW13SYJep",
    "swagger-ui.css": "sha384-wxLW6kwyHktdDGr6Pv1zgm/VGJh99lfUbzSn6HNHBENZlCN7W602k9VkGdxuFvPn",
}
_START = (
    'window.ui = SwaggerUIBundle({url: "/openapi.json", dom_id: "#swagger-ui", layout: "BaseLayout", '
    "deepLinking: true, showExtensions: true, showCommonExtensions: true, "
    "presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset]});"
)


def _digest(script: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()


def _pinned(name: str) -> str:
    """The attributes that load one of ASSETS, checked against its digest."""
    where = "src" if name.endswith(".js") else "href"
    return f'{where}="{SWAGGER_UI}/{name}" integrity="{ASSETS[name]}" crossorigin="anonymous"'


PAGE: Final = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Cairn API</title>
<link rel="stylesheet" {_pinned("swagger-ui.css")}>
</head>
<body>
<div id="swagger-ui"></div>
<script {_pinned("swagger-ui-bundle.js")}></script>
<script>{_START}</script>
</body>
</html>
"""
HEADERS: Final = {
    "Content-Security-Policy": (
        # the pinned files themselves, not the CDN: it serves any npm or GitHub package's files
        f"default-src 'none'; script-src {SWAGGER_UI}/swagger-ui-bundle.js '{_digest(_START)}'; "
        f"style-src {SWAGGER_UI}/swagger-ui.css 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; "
        "form-action 'none'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


def install_api_docs(app: FastAPI) -> None:
    @app.get("/docs", include_in_schema=False)
    def api_docs() -> HTMLResponse:
        return HTMLResponse(PAGE, headers=HEADERS)
