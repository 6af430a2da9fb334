"""mimi.doctor's lines for what a first setup gets wrong (both runtimes); the whole report
on a virtual board over flash.sh is tests/host_sim/test_flash_sh.py's."""
import network
import support

from mimi import config, doctor, llm, seam

RUNTIMES = ("cpython", "micropython")


def _report():
    lines = []
    n = doctor.run(lines.append)
    assert lines[-1] == ("doctor: all OK" if not n else "doctor: %d to fix" % n)
    assert n == len([ln for ln in lines if ln.startswith("FIX ")])
    return lines[:-1], n


def _fresh():
    support.fresh_flash()
    config._cache.clear()
    llm.reset()
    network._state["status"] = network.STAT_IDLE
    network._state["first"] = None


def _has(lines, level, *words):
    for ln in lines:
        if ln.startswith(level + " "):
            for w in words:
                if w not in ln:
                    break
            else:
                return True
    return False


def test_a_blank_board_is_told_what_to_set_and_nothing_changes():
    _fresh()
    lines, n = _report()
    assert _has(lines, "FIX", "tg_token not set", "flash.sh config tg_token=")
    assert _has(lines, "FIX", "no API key for anthropic")
    assert _has(lines, "WARN", "no chat allowed")
    assert _has(lines, "OK", "settings set: none")
    assert _has(lines, "OK", "settings store (NVS): write, read back, erase")
    assert _has(lines, "OK", "PSRAM: ", "KB free of 2048 KB") and _has(lines, "OK", "internal RAM: ", "largest block")
    assert seam.store_get(doctor._NVS_KEY) is None  # its own key, erased again
    for name in config.SETTINGS:
        assert seam.store_get(config.SETTINGS[name][0]) is None, name


def test_names_only_never_a_value():
    _fresh()
    config.set("tg_token", "123456:FAKE-doctor-token")
    config.set("key_anthropic", "sk-ant-FAKE-doctor-key")
    config.set("wifi_pass", "FAKE-doctor-pass")
    lines, _ = _report()
    text = "\n".join(lines)
    assert "FAKE" not in text and "sk-ant" not in text
    assert _has(lines, "OK", "settings set: ", "wifi_pass", "tg_token", "key_anthropic")
    assert not _has(lines, "FIX", "tg_token") and not _has(lines, "FIX", "API key")


def test_no_psram_names_the_image():
    _fresh()
    support.setenv("MIMI_SIM_PSRAM", "0")
    try:
        lines, _ = _report()
    finally:
        support.setenv("MIMI_SIM_PSRAM")
    assert _has(lines, "FIX", "no PSRAM", "SPIRAM_OCT", "N16R8", "cannot run mimi")


def test_wifi_that_does_not_connect_says_why():
    _fresh()
    config.set("wifi_ssid", "mimi-sim-wifi")  # in the stand-in's scan: the password, then
    support.setenv("MIMI_SIM_WIFI", "never")
    try:
        seam.wifi_connect("mimi-sim-wifi", "FAKE-wrong", 0)
        lines, _ = _report()
        assert _has(lines, "FIX", "not connected to mimi-sim-wifi", "check the password")
        config.set("wifi_ssid", "Faraway 5G")
        lines, _ = _report()
        assert _has(lines, "FIX", "not connected to Faraway 5G", "2.4 GHz")
    finally:
        support.setenv("MIMI_SIM_WIFI")


def test_a_server_that_does_not_answer_is_named():
    import socket

    _fresh()
    s = socket.socket()
    s.bind(socket.getaddrinfo("127.0.0.1", 0)[0][-1])
    port = s.getsockname()[1] if hasattr(s, "getsockname") else None
    s.close()
    if port is None:  # the unix port's socket has no getsockname: a port nothing listens on
        port = 9
    config.set("provider", "custom")
    config.set("base_url", "http://127.0.0.1:%d/v1" % port)
    config.set("tg_api_base", "https://nohost.invalid")
    llm.reset()
    lines, _ = _report()
    assert _has(lines, "FIX", "DNS nohost.invalid", "cannot resolve")
    assert _has(lines, "OK", "DNS 127.0.0.1")
    assert _has(lines, "FIX", "LLM 127.0.0.1:%d: cannot connect" % port)
    assert _has(lines, "FIX", "thread with a ", "KB stack", "cannot connect")
