# The setup portal alone, as a board in portal mode runs it (``python3 -m host_sim portal``):
# the stand-in access point, the portal's page on http://127.0.0.1:PORT/ and its DNS on
# 127.0.0.1:DNS_PORT. Both CPython (``python -m host_sim.portal_board``) and the micropython
# command (run as a script) execute this file; it is not firmware.
#   argv: PORT DNS_PORT
import sys


def main(port, dns_port):
    """Serve the portal until it closes (a save with a WiFi network set, Ctrl-C); the exit
    status is 0. Where a board would restart and join the network, this says so and ends."""
    from mimi import config
    from mimi.web import portal

    why = portal.wanted() or "asked for (python3 -m host_sim portal)"
    try:
        r = portal.main(restart=False, port=port, dns_port=dns_port, host="127.0.0.1",
                        address="127.0.0.1:%d" % port, reason=why)
    except KeyboardInterrupt:
        r = "stopped"
    except OSError as e:  # a port taken
        print("mimi host simulator: the portal cannot listen on 127.0.0.1:%d (TCP) and :%d (UDP): %s"
              % (port, dns_port, e))
        return 2
    if r == "saved":
        print("[sim] settings saved: a board would restart now and join %s" % config.get("wifi_ssid"))
    return 0


if __name__ == "__main__":
    if sys.implementation.name != "micropython":
        from host_sim import hostenv

        hostenv.install()
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2])))
