"""Stand-in for the ``micropython`` module on CPython (the unix port has the real one).

https://docs.micropython.org/en/latest/library/micropython.html
"""


def const(expr):
    return expr


def native(f):
    return f


def viper(f):
    return f


def mem_info(verbose=None):
    print("mem: (CPython: no MicroPython heap)")


def qstr_info(verbose=None):
    print("qstr: (CPython)")


def stack_use():
    return 0


def alloc_emergency_exception_buf(size):
    return None


def heap_lock():
    return 0


def heap_unlock():
    return 0


def kbd_intr(chr):
    return None


def opt_level(level=None):
    return 0 if level is None else None


def schedule(func, arg):
    func(arg)
