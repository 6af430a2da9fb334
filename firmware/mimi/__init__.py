"""mimi: a personal AI assistant for the ESP32-S3, in MicroPython.

Importing the package does nothing; ``mimi.app.init()`` then ``mimi.app.start()`` run it.
"""
VERSION = "0.1.0"
