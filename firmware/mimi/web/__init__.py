"""The board on the home network (issue 16): the web app, the chat gateway (``server``,
``gateway``), who may use them (``auth``), the pages (``pages``). Imported only when a
web password is set (``mimi.app.init``)."""
