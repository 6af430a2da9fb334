# ESP32_GENERIC_S3's settings, as in MicroPython v1.28.0 (quad PSRAM detected at boot;
# the SPIRAM_OCT variant, mpconfigvariant_SPIRAM_OCT.cmake, for octal), with this
# folder's partition table (a "romfs" partition after the app; the port makes "vfs"
# after it at boot).
set(IDF_TARGET esp32s3)

set(SDKCONFIG_DEFAULTS
    boards/sdkconfig.base
    boards/sdkconfig.ble
    boards/sdkconfig.spiram_sx
    boards/ESP32_GENERIC_S3/sdkconfig.board
    boards/MIMI_ESP32_S3_ROMFS/sdkconfig.board
)
