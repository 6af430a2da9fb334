"""The web app's pages (issue 16): plain HTML and forms, a little script for the chat.

    GET  /login, POST /login     the password (rate-limited: ``auth.login_wait_s``)
    POST /logout
    GET  /                       chat: the last messages of the chat ``ws_web``, then live
                                 over the WebSocket ``/ws`` (``mimi.web.gateway``)
    GET  /status                 what /status says, and the last warnings and errors
    GET  /reminders              the scheduled jobs; POST /reminders/delete
    GET  /files                  SOUL.md, USER.md, MEMORY.md, the skills
    GET  /edit?path=..., POST /edit   read, edit, save (the tools' checked, atomic write)
    GET  /settings, POST /settings    the settings; secrets are write-only
    GET  /log                    the log's last lines
    GET  /app.css, /app.js
Every page but the login needs the session cookie (else a redirect to /login); every
POST but the login needs the session's CSRF token (``auth.csrf_ok``; else 403). A page
writes as the owner would at the console: a file through ``mimi.tools.files.write_file``
(paths checked, size capped, written atomically), a setting through the console's own
``set_`` commands where there is one (the same checks and side effects).
"""
from micropython import const

from mimi import config, log
from mimi.web import auth

_WEB_HISTORY_MSGS = const(30)  # messages the chat page shows from the history
_WEB_EDIT_MAX_BYTES = const(32768)  # a file the editor opens (as a tool's write: TOOL_WRITE_MAX_BYTES)
CHAT = "ws_web"  # the web app's chat on the bus and its history's session key
_NAV = (("/", "Chat"), ("/status", "Status"), ("/reminders", "Reminders"), ("/files", "Files"),
        ("/settings", "Settings"), ("/log", "Log"))
# Settings the page does not offer: kept by the board itself, or set on their own pages.
_HIDDEN = ("web_tokens", "web_made", "api_key")


def esc(s):
    """``s`` as HTML text (``& < > "`` escaped)."""
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _html(title, body, request=None, here="", status=200, headers=None):
    """A whole page: the navigation (with the logout form when logged in), then ``body``."""
    from microdot import Response

    nav = ""
    if request is not None:
        links = ['<a href="%s"%s>%s</a>' % (u, ' class="on"' if u == here else "", t) for u, t in _NAV]
        nav = ('<nav>%s<form method="post" action="/logout"><input type="hidden" name="csrf" value="%s">'
               '<button>Log out</button></form></nav>' % ("".join(links), auth.csrf_token(request)))
    h = {"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store",
         "X-Frame-Options": "DENY", "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'"}
    if headers:
        h.update(headers)
    return Response('<!doctype html><html><head><meta charset="utf-8"><meta name="viewport" '
                    'content="width=device-width,initial-scale=1"><title>mimi: %s</title>'
                    '<link rel="stylesheet" href="/app.css"></head><body>%s<main><h1>%s</h1>%s</main></body></html>'
                    % (esc(title), nav, esc(title), body), status, h)


def _form(request, action, inner, button):
    return '<form method="post" action="%s"><input type="hidden" name="csrf" value="%s">%s<button>%s</button></form>' % (
        action, auth.csrf_token(request), inner, button)


def _login_needed():
    from microdot import Response

    return Response.redirect("/login")


def _refused():
    return _html("Refused", "<p>This form is stale or came from elsewhere: reload the page and try again.</p>",
                 status=403)


def _editable():
    """The files the editor offers: [(path, label)]."""
    from mimi.storage import skills

    out = [(config.SOUL_PATH, "SOUL.md: personality"), (config.USER_PATH, "USER.md: who you are"),
           (config.MEMORY_PATH, "MEMORY.md: long-term memory")]
    for n in skills.names():
        out.append((config.SKILLS_DIR + "/" + n + ".md", "skill: " + n))
    return out


def _may_edit(path):
    """True for a path the editor may open: one of ``_editable``'s, or a new skill."""
    if path in (config.SOUL_PATH, config.USER_PATH, config.MEMORY_PATH):
        return True
    d = config.SKILLS_DIR + "/"
    name = path[len(d):-3] if path[:len(d)] == d and path[-3:] == ".md" else ""
    return bool(name) and "/" not in name and name[:1] != "."


def routes(app):
    """Add the pages to the microdot ``app``."""
    from microdot import Response

    from mimi.web import assets

    @app.get("/app.css")
    async def css(request):
        return assets.CSS, 200, {"Content-Type": "text/css", "Cache-Control": "max-age=3600"}

    @app.get("/app.js")
    async def js(request):
        return assets.JS, 200, {"Content-Type": "application/javascript", "Cache-Control": "max-age=3600"}

    @app.get("/login")
    async def login_page(request, msg=""):
        return _html("Log in", '%s<form method="post" action="/login"><p><label>Password <input type="password" '
                     'name="password" autofocus autocomplete="current-password"></label> <button>Log in</button></p>'
                     '</form>' % ('<p class="msg">%s</p>' % esc(msg) if msg else ""),
                     status=401 if msg else 200)

    @app.post("/login")
    async def login(request):
        wait = auth.login_wait_s()
        if wait:
            r = await login_page(request, "Too many wrong passwords: try again in %d s." % wait)
            r.status_code = 429
            r.headers["Retry-After"] = str(wait)
            return r
        got = auth.login((request.form or {}).get("password") or "")
        if got is None:
            from mimi import seam

            log.warn("web", "wrong password from %s", seam.address(request.client_addr) if request.client_addr else "?")
            return await login_page(request, "Wrong password.")
        r = Response.redirect("/")
        r.headers["Set-Cookie"] = auth.cookie(got[0])
        return r

    @app.post("/logout")
    async def logout(request):
        if not auth.csrf_ok(request):
            return _refused()
        auth.logout(request)
        r = Response.redirect("/login")
        r.headers["Set-Cookie"] = auth.cookie("")
        return r

    @app.get("/")
    async def chat(request):
        if not auth.session_ok(request):
            return _login_needed()
        from mimi.storage import sessions

        rows = []
        for m in sessions.load(CHAT, _WEB_HISTORY_MSGS):
            c = m.get("content")
            if m.get("role") in ("user", "assistant") and isinstance(c, str) and c:
                rows.append('<div class="m %s">%s</div>' % (m["role"], esc(c)))
        return _html("Chat", '<div id="log">%s</div><form id="say"><input id="text" type="text" autocomplete="off" '
                     'placeholder="Message"><button>Send</button></form><p class="note">The assistant: <span '
                     'id="state">connecting</span></p><script src="/app.js"></script>' % "".join(rows),
                     request, "/")

    @app.get("/status")
    async def status(request):
        if not auth.session_ok(request):
            return _login_needed()
        from mimi import commands

        errs = "\n".join(log.errors) or "none"
        return _html("Status", "<pre>%s</pre><h2>Last warnings and errors</h2><pre>%s</pre>" % (
            esc(commands.status()), esc(errs)), request, "/status")

    @app.get("/reminders")
    async def reminders(request):
        if not auth.session_ok(request):
            return _login_needed()
        from mimi.storage import cronjobs

        rows = []
        for j in cronjobs.list():
            rows.append("<tr><td>%s</td><td>%s</td><td>%s %s</td><td>%s</td><td>%s</td></tr>" % (
                esc(j.get("id")), esc(cronjobs.kind_text(j)), esc(j.get("channel")), esc(j.get("chat_id")),
                esc(j.get("text")), _form(request, "/reminders/delete", '<input type="hidden" name="id" value="%s">'
                                          % esc(j.get("id")), "Delete")))
        body = ("<table><tr><th>id</th><th>when</th><th>to</th><th>what</th><th></th></tr>%s</table>" % "".join(rows)
                if rows else "<p>No reminders or scheduled jobs. Ask the assistant to make one.</p>")
        return _html("Reminders", body, request, "/reminders")

    @app.post("/reminders/delete")
    async def reminder_delete(request):
        if not auth.csrf_ok(request):
            return _refused()
        from mimi.storage import cronjobs

        try:
            cronjobs.remove((request.form or {}).get("id") or "")
        except ValueError:  # gone already (a one-off job that ran; another tab): the list shows what is
            pass
        return Response.redirect("/reminders")

    @app.get("/files")
    async def files(request):
        if not auth.session_ok(request):
            return _login_needed()
        rows = ['<li><a href="/edit?path=%s">%s</a></li>' % (esc(p), esc(t)) for p, t in _editable()]
        return _html("Files", "<ul>%s</ul><form method=\"get\" action=\"/edit\"><p>New skill: <input type=\"text\" "
                     "name=\"skill\" placeholder=\"name\"> <button>Create</button></p></form>" % "".join(rows),
                     request, "/files")

    @app.get("/edit")
    async def edit(request, path=None, msg="", text=None, status=200):
        if not auth.session_ok(request):
            return _login_needed()
        from mimi.storage import fs

        path = path or request.args.get("path") or ""
        if request.args.get("skill"):
            path = config.SKILLS_DIR + "/" + request.args.get("skill").strip() + ".md"
        if not _may_edit(path):
            return _html("Edit", "<p>Not a file this page edits.</p>", request, "/files", 404)
        if text is None:
            try:
                text, cut, _ = fs.read_text(path, _WEB_EDIT_MAX_BYTES)
            except fs.NotFound:
                text, cut = "", False
            if cut:
                msg = msg or "This file is longer than %d bytes: edit it from a chat or the console." % \
                    _WEB_EDIT_MAX_BYTES
        body = ('%s<p><code>%s</code></p>' % ('<p class="msg">%s</p>' % esc(msg) if msg else "", esc(path)) +
                _form(request, "/edit", '<input type="hidden" name="path" value="%s"><textarea name="content">%s'
                      '</textarea><p>' % (esc(path), esc(text)), "Save") + "</p>")
        return _html("Edit", body, request, "/files", status)

    @app.post("/edit")
    async def save(request):
        if not auth.csrf_ok(request):
            return _refused()
        from mimi.tools import files as ftools

        path = (request.form or {}).get("path") or ""
        text = ((request.form or {}).get("content") or "").replace("\r\n", "\n")
        if not _may_edit(path):
            return _html("Edit", "<p>Not a file this page edits.</p>", request, "/files", 404)
        try:
            r = ftools.write_file({"path": path, "content": text}, {"channel": "gateway", "chat_id": CHAT,
                                                                     "session": CHAT, "role": 0})
        except (ValueError, OSError) as e:
            return await edit(request, path, "Not saved: %s" % e, text, 400)
        log.info("web", "saved %s", path)
        return await edit(request, path, "Saved: " + r)

    @app.get("/settings")
    async def settings(request, msg=""):
        if not auth.session_ok(request):
            return _login_needed()
        rows = []
        for n in sorted(config.SETTINGS):
            if n in _HIDDEN:
                continue
            if config.is_secret(n):  # write-only: never shown, not even masked
                field = '<input type="password" name="value" autocomplete="new-password" placeholder="%s">' % (
                    "set: type to replace" if config.get(n) else "not set")
            else:
                field = '<input type="text" name="value" value="%s">' % esc(config.get(n))
            rows.append("<tr><td>%s</td><td>%s</td></tr>" % (esc(n), _form(
                request, "/settings", '<input type="hidden" name="name" value="%s">%s ' % (esc(n), field), "Set")))
        return _html("Settings", '%s<p>Secrets are write-only. Some settings take effect at the next restart.</p>'
                     '<p><a href="/update">Update the software</a> (an image from tools/flash.sh; the board'
                     ' goes back to this version by itself if the new one fails)</p>'
                     '<table>%s</table>' % ('<p class="msg">%s</p>' % esc(msg) if msg else "", "".join(rows)),
                     request, "/settings")

    @app.post("/settings")
    async def settings_set(request):
        if not auth.csrf_ok(request):
            return _refused()
        name = (request.form or {}).get("name") or ""
        value = ((request.form or {}).get("value") or "").strip()
        if name not in config.SETTINGS or name in _HIDDEN:
            return await settings(request, "No setting %s." % name)
        if config.is_secret(name) and not value:
            return await settings(request, "%s: unchanged (empty)." % name)
        try:
            r = _set(name, value)
        except (ValueError, TypeError, OSError) as e:
            r = "%s: not changed: %s" % (name, e or type(e).__name__)
        return await settings(request, r)

    @app.get("/log")
    async def log_page(request):
        if not auth.session_ok(request):
            return _login_needed()
        return _html("Log", "<pre>%s</pre>" % esc("\n".join(log.tail) or "(nothing yet)"), request, "/log")


def _set(name, value):
    """Set a setting as the console's ``set_<name>`` would (its checks, its side effects),
    or plainly when the console has no such command. Returns what to show."""
    from mimi import cli, commands

    if cli._spec("set_" + name):
        r = cli._do("set_" + name, value, (value,))
    else:
        if not commands.plain(value):
            raise ValueError("control characters are not allowed")
        if name in ("web_port", "gateway_port") and not (value.isdigit() and 0 < int(value) < 65536):
            raise ValueError("a port is a number from 1 to 65535")
        config.set(name, value)
        r = "%s set" % name
    if config.is_secret(name):
        return "%s set." % name
    return r if isinstance(r, str) else "%s set to %s" % (name, config.get(name))
