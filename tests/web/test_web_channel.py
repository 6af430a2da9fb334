"""The gateway as a channel: its chat ids, sessions, role and routing; the console's web
commands (both runtimes)."""
from mimi import app, config, policy
from mimi.storage import sessions
from mimi.web import auth, gateway
import support

RUNTIMES = ("cpython", "micropython")


def test_gateway_chat_ids_are_namespaced_and_checked():
    assert gateway.bus_id("kitchen") == "ws_kitchen"
    assert gateway.bus_id("ws_3") == "ws_3"  # MimiClaw's default ids keep their form
    assert gateway.bus_id("1001") == "ws_1001"  # never Telegram's chat 1001
    for bad in ("", "a" * 33, "../tg_1", "a b", "x/y", "tg_1\n"):
        e = support.raises(ValueError, gateway.bus_id, bad)
        assert "chat_id" in str(e)


def test_a_gateway_chat_has_its_own_history_and_is_the_owner_s():
    assert sessions.key_for("gateway", "ws_kitchen") == "ws_kitchen"
    assert sessions.key_for("telegram", "1001") == "tg_1001"
    assert policy.role({"channel": "gateway", "chat_id": "ws_kitchen"}) == 0
    # a reminder a gateway chat made keeps the owner's role
    assert policy.role({"channel": "cron", "chat_id": "ws_kitchen", "by": "ws_kitchen"}) == 0
    support.fresh_flash()
    config.set("allowed_chats", "1001,1002")
    assert policy.role({"channel": "telegram", "chat_id": "1002"}) == 1  # unchanged for others


def test_replies_to_gateway_chats_go_to_the_web_app_or_are_dropped_without_it():
    saved = app.state["web"]
    try:
        app.state["web"] = None
        assert app.route({"channel": "gateway", "chat_id": "ws_x", "text": "hi", "kind": "text"})
        assert app.route({"channel": "cron", "chat_id": "ws_x", "text": "job", "kind": "text"})
    finally:
        app.state["web"] = saved


def test_console_sets_the_web_password_and_makes_tokens():
    from mimi import cli

    support.fresh_flash()
    auth._sessions.clear()
    out = []
    cli.out = out.append
    try:
        cli.execute("set_web_password short")
        assert out[-1].startswith("error:") and "8 characters" in out[-1] and not auth.enabled()
        cli.execute("set_web_password fake-pass-for-web")
        assert out[-1].startswith("web_password set to ****") and "fake" not in out[-1]
        assert auth.token_ok("fake-pass-for-web")
        del out[:]
        cli.execute("web_token")
        token, note = out[0].split("\n")
        assert "shown only now" in note
        assert len(token) == 32 and auth.token_ok(token)
        assert token not in config.get("web_tokens")
    finally:
        cli.out = print
