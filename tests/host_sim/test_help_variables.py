"""Every setting the simulator takes from the environment is named in its --help."""
from host_sim import __main__ as cli_main, launcher


def test_help_names_every_environment_setting():
    for name, _setting in launcher.ENV_SETTINGS:
        assert name in cli_main._VARIABLES, name
    assert "MIMI_MICROPYTHON" in cli_main._VARIABLES
