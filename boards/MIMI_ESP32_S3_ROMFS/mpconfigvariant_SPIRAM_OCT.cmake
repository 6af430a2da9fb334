# Octal PSRAM (N16R8, N8R8): ESP32_GENERIC_S3's own variant (v1.28.0), built with
# make BOARD=MIMI_ESP32_S3_ROMFS BOARD_VARIANT=SPIRAM_OCT.
set(SDKCONFIG_DEFAULTS
    ${SDKCONFIG_DEFAULTS}
    boards/sdkconfig.240mhz
    boards/sdkconfig.spiram_oct
)

list(APPEND MICROPY_DEF_BOARD
    MICROPY_HW_BOARD_NAME="Generic ESP32S3 module with Octal-SPIRAM (ROMFS, for mimi)"
)
