"""Server URL detection (spec background-processes §5.4 with Appendix A 4 and 5 fixed).

The banners are the servers' own texts, copied from their sources or from published output:
each case names where it comes from. Coloured variants apply the escape codes those programs'
colour libraries write (picocolors/chalk: bold ``ESC[1m``..``ESC[22m``, green ``ESC[32m``, cyan
``ESC[36m``, reset ``ESC[39m``; click: ``ESC[1m``..``ESC[0m``).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fxdesk.domain.log_scan import UrlScanner
from fxdesk.domain.server_urls import (
    HostReach,
    detect_server_url,
    host_reach,
    strip_terminal_codes,
)

ESC = "\x1b"


def bold(text: str) -> str:
    return f"{ESC}[1m{text}{ESC}[22m"


def green(text: str) -> str:
    return f"{ESC}[32m{text}{ESC}[39m"


def cyan(text: str) -> str:
    return f"{ESC}[36m{text}{ESC}[39m"


def dim(text: str) -> str:
    return f"{ESC}[2m{text}{ESC}[22m"


def vite_url(url: str) -> str:
    """Vite's colorUrl: cyan, with the port in bold (packages/vite/src/node/logger.ts)."""
    host, _, rest = url.rpartition(":")
    port, _, path = rest.partition("/")
    return cyan(f"{host}:{bold(port)}/{path}")


# vitejs/vite packages/vite/src/node/logger.ts printServerUrls (also SvelteKit, Angular 17+,
# Nuxt 3): "  ➜  Local:   URL", "  ➜  Network: URL" or "use --host to expose".
VITE_PLAIN = (
    "\n  VITE v5.4.2  ready in 312 ms\n\n"
    "  ➜  Local:   http://localhost:5173/\n"
    "  ➜  Network: use --host to expose\n"
    "  ➜  press h + enter to show help\n"
)
VITE_COLOURED = (
    f"\n  {green(bold('VITE') + ' v5.4.2')}  {dim('ready in')} {bold('312')} {dim('ms')}\n\n"
    f"  {green('➜')}  {bold('Local')}:   {vite_url('http://localhost:5173/')}\n"
    f"  {green('➜')}  {bold('Network')}: {vite_url('http://192.168.1.23:5173/')}\n"
    f"{dim('  ' + green('➜') + '  press ')}{bold('h + enter')}{dim(' to show help')}\n"
)
VITE_PORT_TAKEN = (
    "Port 5173 is in use, trying another one...\n\n"
    "  VITE v5.4.2  ready in 290 ms\n\n"
    "  ➜  Local:   http://localhost:5174/\n"
    "  ➜  Network: http://10.0.0.7:5174/\n"
)
# vercel/next.js packages/next/src/server/lib/app-info-log.ts logStartInfo (Log.bootstrap writes
# three spaces first); the warning is Log.warn's " ⚠ " with a docs link, as `next dev` prints it.
NEXT_15 = (
    f"   {bold(f'{ESC}[35m▲ Next.js 15.1.0{ESC}[39m')} (Turbopack)\n"
    "   - Local:        http://localhost:3000\n"
    "   - Network:      http://192.168.1.23:3000\n\n"
    f" {ESC}[33m⚠{ESC}[39m Invalid next.config.js options detected: \n"
    " ⚠ See more info here: https://nextjs.org/docs/messages/invalid-next-config\n"
    f" {green('✓')} Starting...\n"
    f" {green('✓')} Ready in 1843ms\n"
)
# Next.js 12: packages/next/cli/next-dev.ts "started server on {host}:{port}, url: {appUrl}".
NEXT_12 = (
    "ready - started server on 0.0.0.0:3000, url: http://localhost:3000\n"
    "info  - Loaded env from /home/me/app/.env.local\n"
    "warn  - You have enabled experimental feature (appDir) in next.config.js.\n"
    "info  - Thank you for testing `appDir` please leave your feedback at "
    "https://nextjs.link/app-feedback\n"
)
# webpack/webpack-dev-server lib/Server.js logStatus ("Project is running at:", "Loopback:",
# "On Your Network (IPv4):"), behind http-proxy-middleware's "[HPM] Proxy created:" line.
WEBPACK_DEV_SERVER = (
    "<i> [webpack-dev-server] [HPM] Proxy created: /api  -> http://localhost:3000\n"
    "<i> [webpack-dev-server] Project is running at:\n"
    "<i> [webpack-dev-server] Loopback: http://localhost:8080/, http://[::1]:8080/\n"
    "<i> [webpack-dev-server] On Your Network (IPv4): http://192.168.0.73:8080/\n"
    "<i> [webpack-dev-server] Content not from webpack is served from '/app/public' directory\n"
)
# django/django django/core/management/commands/runserver.py inner_run.
DJANGO = (
    "Watching for file changes with StatReloader\n"
    "Performing system checks...\n\n"
    "System check identified no issues (0 silenced).\n"
    "May 10, 2026 - 10:00:00\n"
    "Django version 5.0.6, using settings 'mysite.settings'\n"
    "Starting development server at http://127.0.0.1:8000/\n"
    "Quit the server with CONTROL-C.\n"
)
# pallets/werkzeug src/werkzeug/serving.py log_startup and run_simple (Flask's `flask run`).
FLASK = (
    " * Serving Flask app 'app'\n"
    " * Debug mode: off\n"
    f"{ESC}[31m{ESC}[1mWARNING: This is a development server. Do not use it in a production "
    f"deployment. Use a production WSGI server instead.{ESC}[0m\n"
    " * Running on all addresses (0.0.0.0)\n"
    " * Running on http://127.0.0.1:5000\n"
    " * Running on http://192.168.2.56:5000\n"
    f"{ESC}[33mPress CTRL+C to quit{ESC}[0m\n"
)
# encode/uvicorn uvicorn/config.py bind_socket: color_message with click.style(bold=True) and
# the default formatter's green level prefix.
UVICORN = (
    f"{green('INFO')}:     Will watch for changes in these directories: ['/app']\n"
    f"{ESC}[32mINFO{ESC}[0m:     Uvicorn running on {ESC}[1mhttp://127.0.0.1:8000{ESC}[0m "
    "(Press CTRL+C to quit)\n"
    f"{ESC}[32mINFO{ESC}[0m:     Started reloader process [4242] using WatchFiles\n"
)
# puma/puma lib/puma/binder.rb (5+: http://, before: tcp://), as `bin/rails server` prints it.
RAILS_PUMA_6 = (
    "=> Booting Puma\n"
    "=> Rails 7.1.3 application starting in development \n"
    "=> Run `bin/rails server --help` for more startup options\n"
    "Puma starting in single mode...\n"
    '* Puma version: 6.4.2 (ruby 3.3.0-p0) ("The Eagle of Durango")\n'
    "*  Min threads: 5\n"
    "*  Max threads: 5\n"
    "*  Environment: development\n"
    "*          PID: 4242\n"
    "* Listening on http://127.0.0.1:3000\n"
    "* Listening on http://[::1]:3000\n"
    "Use Ctrl-C to stop\n"
)
RAILS_PUMA_4 = (
    "Puma starting in single mode...\n"
    "* Version 4.3.2 (ruby 2.7.0-p0), codename: Mysterious Traveller\n"
    "* Min threads: 5, max threads: 5\n"
    "* Environment: development\n"
    "* Listening on tcp://[::1]:3000\n"
    "* Listening on tcp://127.0.0.1:3000\n"
    "Use Ctrl-C to stop\n"
)
# cpython Lib/http/server.py test(): "Serving HTTP on {host} port {port} (http://...) ...".
HTTP_SERVER = "Serving HTTP on 0.0.0.0 port 8000 (http://0.0.0.0:8000/) ...\n"
HTTP_SERVER_V6 = "Serving HTTP on :: port 8000 (http://[::]:8000/) ...\n"
# angular/angular-cli dev-server builder before v17 (webpack).
ANGULAR_WEBPACK = (
    "** Angular Live Development Server is listening on localhost:4200, open your browser on "
    "http://localhost:4200/ **\n"
    "\n✔ Compiled successfully.\n"
)
# withastro/astro packages/astro/src/core/messages.ts serverStart.
ASTRO = (
    f" {ESC}[42m{ESC}[30m astro {ESC}[39m{ESC}[49m {green('v4.5.0')} {dim('ready in')} 312 ms\n\n"
    f"┃ Local    {cyan('http://localhost:4321/')}\n"
    f"┃ Network  {dim('use --host to expose')}\n"
)
# gohugoio/hugo commands/server.go.
HUGO = (
    "Running in Fast Render Mode. For full rebuilds on change: hugo server --disableFastRender\n"
    "Web Server is available at http://localhost:1313/ (bind address 127.0.0.1)\n"
    "Press Ctrl+C to stop\n"
)
# jekyll/jekyll lib/jekyll/commands/serve.rb.
JEKYLL = (
    " Auto-regeneration: enabled for '/site'\n"
    "    Server address: http://127.0.0.1:4000/\n"
    "  Server running... press ctrl-c to stop.\n"
)
# facebook/create-react-app react-dev-utils/WebpackDevServerUtils.js printInstructions.
CREATE_REACT_APP = (
    "Compiled successfully!\n\n"
    "You can now view my-app in the browser.\n\n"
    "  Local:            http://localhost:3000\n"
    "  On Your Network:  http://192.168.1.5:3000\n\n"
    "Note that the development build is not optimized.\n"
)
# laravel/framework Illuminate/Foundation/Console/ServeCommand.php.
LARAVEL = (
    "\n   INFO  Server running on [http://127.0.0.1:8000].\n\n  Press Ctrl+C to stop the server\n"
)


@pytest.mark.parametrize(
    ("banner", "expected"),
    [
        pytest.param(VITE_PLAIN, "http://localhost:5173/", id="vite"),
        pytest.param(VITE_COLOURED, "http://localhost:5173/", id="vite-coloured-port"),
        pytest.param(VITE_PORT_TAKEN, "http://localhost:5174/", id="vite-port-taken"),
        pytest.param(NEXT_15, "http://localhost:3000", id="next-15-docs-link-ignored"),
        pytest.param(NEXT_12, "http://localhost:3000", id="next-12-ready-started"),
        pytest.param(WEBPACK_DEV_SERVER, "http://localhost:8080/", id="webpack-proxy-first"),
        pytest.param(DJANGO, "http://127.0.0.1:8000/", id="django"),
        pytest.param(FLASK, "http://127.0.0.1:5000", id="flask-all-addresses"),
        pytest.param(UVICORN, "http://127.0.0.1:8000", id="uvicorn-coloured"),
        pytest.param(RAILS_PUMA_6, "http://127.0.0.1:3000", id="rails-puma-6"),
        pytest.param(RAILS_PUMA_4, "http://127.0.0.1:3000", id="rails-puma-4-tcp"),
        pytest.param(HTTP_SERVER, "http://localhost:8000/", id="http-server-any-address"),
        pytest.param(HTTP_SERVER_V6, "http://localhost:8000/", id="http-server-ipv6-any"),
        pytest.param(ANGULAR_WEBPACK, "http://localhost:4200/", id="angular-webpack"),
        pytest.param(ASTRO, "http://localhost:4321/", id="astro-coloured"),
        pytest.param(HUGO, "http://localhost:1313/", id="hugo"),
        pytest.param(JEKYLL, "http://127.0.0.1:4000/", id="jekyll"),
        pytest.param(CREATE_REACT_APP, "http://localhost:3000", id="create-react-app"),
        pytest.param(LARAVEL, "http://127.0.0.1:8000", id="laravel-bracketed"),
    ],
)
def test_each_server_banner_gives_its_local_url(banner: str, expected: str) -> None:
    found = detect_server_url(banner)
    assert found is not None
    assert found.url == expected


@pytest.mark.parametrize(
    ("banner", "confident"),
    [
        (VITE_COLOURED, True),
        (NEXT_15, True),
        (WEBPACK_DEV_SERVER, True),
        (DJANGO, True),
        (FLASK, True),
        (UVICORN, True),
        (RAILS_PUMA_6, True),
        (HUGO, True),
        (HTTP_SERVER, False),  # any-address: published once nothing better follows
        ("API_BASE=http://localhost:4000\n", False),
        ("<i> [webpack-dev-server] [HPM] Proxy created: /api  -> http://localhost:3000\n", False),
    ],
)
def test_banners_are_confident_and_stray_local_urls_are_not(banner: str, confident: bool) -> None:
    found = detect_server_url(banner)
    assert found is not None
    assert found.confident is confident


@pytest.mark.parametrize(
    "text",
    [
        " ⚠ See more info here: https://nextjs.org/docs/messages/invalid-next-config\n",
        "Docs: http://example.com:8080/docs and https://8.8.8.8/\n",
        "Port 3000 is in use, trying 3001 instead.\n",
        "  ➜  Network: use --host to expose\n",
        "listening on http://localhost:%d and http://${HOST}:${PORT}/\n",
        " * Running on http://[your-ip]:5000\n",
        "bad port http://localhost:99999/\n",
        "http:\x1b[0m//localhost:3000 (the scheme itself split by a colour code)\n",
    ],
)
def test_no_url_when_only_public_links_templates_or_nothing(text: str) -> None:
    assert detect_server_url(text) is None


def test_a_public_link_never_wins_even_alone_with_a_ready_word() -> None:
    assert detect_server_url("ready - docs at https://vitejs.dev/guide/ (server)\n") is None


def test_trailing_punctuation_and_unopened_brackets_are_dropped() -> None:
    assert detect_server_url("up at http://localhost:3000.\n").url == "http://localhost:3000"
    assert detect_server_url("(see http://localhost:3000/),\n").url == "http://localhost:3000/"
    assert detect_server_url("'http://127.0.0.1:9000/app?x=1';\n").url == (
        "http://127.0.0.1:9000/app?x=1"
    )
    assert detect_server_url("open http://[::1]:3000]!\n").url == "http://[::1]:3000"
    assert detect_server_url("wiki http://localhost:8080/Foo_(bar)\n").url == (
        "http://localhost:8080/Foo_(bar)"
    )


def test_osc8_hyperlink_counts_its_target_and_leaves_no_escape() -> None:
    st_ = f"{ESC}\\"
    linked_text = (
        f"  ➜  Local:   {ESC}]8;;http://localhost:5173/{st_}http://localhost:5173/{ESC}]8;;{st_}"
    )
    linked_word = f"  ➜  {ESC}]8;;http://localhost:5173/\x07Local{ESC}]8;;\x07 server\n"
    assert detect_server_url(linked_text).url == "http://localhost:5173/"
    assert detect_server_url(linked_word).url == "http://localhost:5173/"


def test_any_address_is_shown_as_localhost_but_an_explicit_loopback_wins() -> None:
    text = "listening on http://0.0.0.0:3000\nlistening on http://127.0.0.1:3000\n"
    found = detect_server_url(text)
    assert found.url == "http://127.0.0.1:3000"
    alone = detect_server_url("listening on http://0.0.0.0:3000/app\n")
    assert (alone.url, alone.reach, alone.is_loopback) == (
        "http://localhost:3000/app",
        HostReach.ANY_ADDRESS,
        True,
    )


def test_a_forwarding_target_loses_to_the_servers_own_line() -> None:
    text = (
        "[dev-server] Proxy created: /api -> http://localhost:3000\n"
        "Starting development server at http://127.0.0.1:8000/\n"
    )
    assert detect_server_url(text).url == "http://127.0.0.1:8000/"


def test_ties_go_to_the_first_line() -> None:
    text = "server at http://localhost:3000\nserver at http://localhost:3001\n"
    assert detect_server_url(text).url == "http://localhost:3000"


def test_own_host_name_is_local_but_below_loopback() -> None:
    text = "Jupyter at http://devbox:8888/lab\n"
    assert detect_server_url(text, own_names={"devbox"}).reach is HostReach.OWN_NAME
    both = text + "or http://127.0.0.1:8888/lab\n"
    assert detect_server_url(both, own_names={"devbox"}).url == "http://127.0.0.1:8888/lab"


@pytest.mark.parametrize(
    ("host", "reach"),
    [
        ("localhost", HostReach.LOOPBACK),
        ("app.localhost", HostReach.LOOPBACK),
        ("127.0.1.1", HostReach.LOOPBACK),
        ("::1", HostReach.LOOPBACK),
        ("0.0.0.0", HostReach.ANY_ADDRESS),
        ("::", HostReach.ANY_ADDRESS),
        ("192.168.1.5", HostReach.PRIVATE),
        ("10.1.2.3", HostReach.PRIVATE),
        ("172.16.0.9", HostReach.PRIVATE),
        ("fd00::1", HostReach.PRIVATE),
        ("api", HostReach.PRIVATE),
        ("mymac.local", HostReach.OWN_NAME),
        ("172.32.0.1", HostReach.PUBLIC),
        ("10.example.com", HostReach.PUBLIC),
        ("nextjs.org", HostReach.PUBLIC),
    ],
)
def test_host_reach(host: str, reach: HostReach) -> None:
    assert host_reach(host) is reach


def test_strip_terminal_codes_keeps_text_and_tabs() -> None:
    raw = f"{ESC}]0;title\x07{ESC}[1;32mok{ESC}[0m\tdone{ESC}(B{ESC}[?25l\x08!{ESC}P1$r{ESC}\\"
    assert strip_terminal_codes(raw) == "ok\tdone!"


# --- properties -----------------------------------------------------------------------------

_PIECES = [
    "http://",
    "https://",
    "tcp://",
    "localhost",
    "127.0.0.1",
    "[::1]",
    "0.0.0.0",
    "192.168.0.2",
    "example.com",
    ":3000",
    ":99999",
    "/",
    "/app",
    "?q=1",
    " ",
    "\n",
    "\r",
    "\t",
    ".",
    ",",
    ")",
    "(",
    "]",
    "[",
    "'",
    '"',
    ";",
    "!",
    "\x00",
    "\x1b",
    "\x1b[",
    "\x1b[1m",
    "\x1b[0m",
    "\x1b]8;;",
    "\x1b\\",
    "\x07",
    "\x9b",
    "Local:",
    " ready ",
    " Network: ",
    " error ",
    " proxy -> ",
    "é",
    "➜",
]
_TEXT = st.lists(
    st.one_of(
        st.sampled_from(_PIECES),
        st.text(st.characters(blacklist_categories=("Cs",)), max_size=4),
    ),
    max_size=40,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(_TEXT)
def test_a_found_url_is_printable_ascii_without_trailing_punctuation(text: str) -> None:
    found = detect_server_url(text)
    if found is None:
        return
    assert all("!" <= ch <= "~" for ch in found.url), found.url
    assert found.url[-1] not in ".,;:!?'\"", found.url
    assert found.reach is not HostReach.PUBLIC
    assert found.url.startswith(("http://", "https://"))


@settings(max_examples=400, deadline=None)
@given(_TEXT, st.lists(st.integers(min_value=0, max_value=400), max_size=8))
def test_chunked_scan_gives_the_whole_text_answer(text: str, cuts: list[int]) -> None:
    data = text.encode()
    scanner = UrlScanner()
    start = 0
    for cut in sorted(c % (len(data) + 1) for c in cuts):
        scanner.feed(data[start:cut])
        start = cut
    scanner.feed(data[start:])
    assert scanner.finish() == detect_server_url(text)


@settings(max_examples=300, deadline=None)
@given(
    st.binary(max_size=300) | _TEXT.map(str.encode),
    st.lists(st.integers(min_value=0, max_value=300), max_size=8),
    st.integers(min_value=1, max_value=40),
)
def test_chunking_never_changes_the_answer_even_for_long_lines(
    data: bytes, cuts: list[int], max_line: int
) -> None:
    whole = UrlScanner(max_line_bytes=max_line)
    whole.feed(data)
    chunked = UrlScanner(max_line_bytes=max_line)
    start = 0
    for cut in sorted(c % (len(data) + 1) for c in cuts):
        chunked.feed(data[start:cut])
        start = cut
    chunked.feed(data[start:])
    assert chunked.finish() == whole.finish()
    assert chunked.pending_bytes == 0
