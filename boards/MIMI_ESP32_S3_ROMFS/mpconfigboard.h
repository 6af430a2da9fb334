// ESP32_GENERIC_S3 (MicroPython v1.28.0's boards/ESP32_GENERIC_S3/mpconfigboard.h) plus
// ROMFS: VfsRom and vfs.rom_ioctl, so the port mounts the "romfs" partition at /rom at boot.
#ifndef MICROPY_HW_BOARD_NAME
// Set by mpconfigvariant_SPIRAM_OCT.cmake for the octal-PSRAM variant.
#define MICROPY_HW_BOARD_NAME               "Generic ESP32S3 module (ROMFS, for mimi)"
#endif
#define MICROPY_HW_MCU_NAME                 "ESP32S3"

// Enable UART REPL for modules that have an external USB-UART and don't use native USB.
#define MICROPY_HW_ENABLE_UART_REPL         (1)

#define MICROPY_HW_I2C0_SCL                 (9)
#define MICROPY_HW_I2C0_SDA                 (8)

#define MICROPY_VFS_ROM                     (1)
#define MICROPY_VFS_ROM_IOCTL               (1)
