# mimi, frozen into a MicroPython firmware (MicroPython docs, "MicroPython manifest
# files"): a board's manifest, or the one FROZEN_MANIFEST names, includes this file
# after the port's own, which keeps asyncio, mip and the rest:
#
#     include("$(PORT_DIR)/boards/manifest.py")
#     include("/path/to/mimi/manifest.py")
#
# Freezing takes the package's .py files only. Its data files (texts.md, agent/rules.md,
# agent/turn.md, tools/tools.jsonl) and boot.py and main.py (which the port runs only as
# files) go on the file system: tools/flash.sh deploy, on a firmware with mimi frozen,
# copies just those (mimi.data_path finds the data files in /lib/mimi).


def _version():
    # The package's VERSION (firmware/mimi/__init__.py), the one place it is kept.
    # Manifests run with this file's folder as the current one (tools/manifestfile.py).
    with open("firmware/mimi/__init__.py") as f:
        for line in f:
            if line.startswith("VERSION = "):
                return line.split('"')[1]
    raise ValueError("firmware/mimi/__init__.py: no VERSION line")


metadata(description="mimi: a personal AI assistant for the ESP32-S3", version=_version())

# The micropython-lib modules mimi imports (mimi/seam.py); every ESP32 firmware of
# micropython.org has them too (ports/esp32/boards/manifest.py), so these add nothing
# there and keep a leaner board's firmware whole.
require("ntptime")
require("neopixel")
# The sensor drivers mimi.hw.sensors imports (issue 18): DHT11/22, the 1-Wire bus, DS18B20.
require("dht")
require("onewire")
require("ds18x20")
# MQTT (mimi/net/mqtt.py, used only while the mqtt_url setting is set): not in the
# micropython.org firmware; without freezing, tools/flash.sh puts firmware/lib/umqtt in /lib.
require("umqtt.simple")

package("mimi", base_path="firmware")
# microdot 2.7.0 (firmware/lib/README.md): the web app and the LAN chat gateway (issue 16).
package("microdot", base_path="firmware/lib")
