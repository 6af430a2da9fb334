"""Build the MicroPython code that stores mimi's settings in a board's NVS (``flash.sh config``).

    python3 tools/nvs_config.py NAME=VALUE [NAME=VALUE ...] > /tmp/cfg.py
    mpremote connect PORT run /tmp/cfg.py

NAMEs are the settings of ``firmware/mimi/config.py`` (``SETTINGS``: wifi_ssid, wifi_pass,
tg_token, tg_api_base, provider, model, api_key, base_url, search_key, search_provider,
tz, allowed_chats, owner_chat, board, proxy, no_proxy, key_<provider>); each is written as a UTF-8 blob
under its store key in ``esp32.NVS("mimi")`` and committed once, as
``mimi.seam.store_set`` does. ``api_key`` also goes to the key of the provider in effect
(given in the same command, else the one stored on the board): the firmware sends a
provider only its own key.
``NAME=`` (empty) erases the setting (back to its default). Values are checked as the
simulator checks its ``MIMI_*`` variables (``host_sim/launcher.py``). The code prints the
names it stored, secrets never; it goes to the board in a file (``mpremote run``), so no
secret appears on a command line. Exit status 2 on a bad argument, nothing printed to
stdout then.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from host_sim import launcher  # noqa: E402


def build(pairs):
    """MicroPython source (str) that stores ``pairs`` ([(name, value or None)])."""
    specs = launcher.setting_specs()
    lines = ["import esp32", "_n = esp32.NVS('mimi')"]
    for name, value in pairs:
        key = specs[name][0]
        if value is None:
            lines.append("try:\n    _n.erase_key(%r)\nexcept OSError:\n    pass" % key)
        else:
            lines.append("_n.set_blob(%r, %r)" % (key, value.encode()))
    given = dict(pairs)
    if given.get("api_key"):
        # The firmware reads only the provider's own key (key_<provider>): set the one of the
        # provider in effect, read on the board.
        keys = {n[4:]: specs[n][0] for n in specs if n.startswith("key_")}
        prov = given.get("provider")
        lines.append("_keys = %r" % keys)
        if prov:
            lines.append("_p = %r" % prov)
        else:
            lines.append("_b = bytearray(64)\ntry:\n    _p = bytes(_b[:_n.get_blob(%r, _b)]).decode()\n"
                         "except OSError:\n    _p = %r" % (specs["provider"][0], specs["provider"][1]))
        lines.append("if _p in _keys:\n    _n.set_blob(_keys[_p], %r)" % given["api_key"].encode())
    lines.append("_n.commit()")
    names = ", ".join(n + (" (erased)" if v is None else "") for n, v in pairs)
    lines.append("print(%r)" % ("mimi settings stored: " + names + ". They take effect at the next boot."))
    return "\n".join(lines) + "\n"


def parse(args):
    """[(name, normalised value or None)] from NAME=VALUE arguments; ``ValueError`` on a bad one."""
    specs = launcher.setting_specs()
    out = []
    bad = []  # every problem at once, not one per run
    for i, a in enumerate(args):
        name, eq, raw = a.partition("=")
        name = name.strip()
        if not eq:
            # Named only when it is a setting's name: a lone argument may be a password.
            bad.append("%s: expected NAME=VALUE" % (name if name in specs else "argument %d (no '=')" % (i + 1)))
        elif name not in specs:
            bad.append("unknown setting %r; known: %s" % (name, ", ".join(specs)))
        elif raw == "":
            out.append((name, None))
        else:
            try:
                out.append((name, launcher.check_setting(name, raw)))
            except ValueError as e:
                bad.append("%s: expected %s" % (name, e))
    if bad:
        raise ValueError("\n  ".join(bad))
    if not out:
        raise ValueError("give at least one NAME=VALUE")
    given = dict(out)
    port = {"custom": "PORT", "ollama": "11434", "lmstudio": "1234"}.get(given.get("provider"))
    if port and not given.get("base_url"):
        # custom has no address to fall back on; the local servers' presets say localhost,
        # which on the board is the board itself
        raise ValueError("provider=%s needs base_url=http://<the computer's address>:%s/v1 in the same command "
                         "(on the board, localhost is the board)" % (given["provider"], port))
    return out


def main(argv):
    try:
        pairs = parse(argv)
    except ValueError as e:
        print("flash.sh config: %s" % e, file=sys.stderr)
        return 2
    sys.stdout.write(build(pairs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
