"""What the agent checks in a reply's tool calls before it runs them (issue 13, items 8, 16).

- **Cut calls.** A reply stopped by the length limit (stop ``max_tokens``: Anthropic's
  ``stop_reason`` with a ``tool_use`` block, OpenAI's ``finish_reason`` "length" with
  ``tool_calls``) never runs its calls: their arguments may hold half a file, and a cut
  ``write_file`` or ``edit_file`` would destroy what the file held. Each gets an error
  result asking for smaller pieces, and its half arguments are not kept (they would only
  fill the history). A second cut reply in one turn ends it with a word to the user.
- **Repeats.** The same call (name and arguments) made ``_CHECKS_REPEAT_MAX`` times
  within the last ``_CHECKS_REPEAT_WINDOW`` calls of a turn (ZeroClaw's loop detector: 3
  in a window of 20) is not run: its result tells the model to use what it has. A repeat
  after that note ends the turn with a word to the user, so a turn never spends its
  rounds on one call.
``Checks()`` lives for one turn; after a round, ``stop`` holds the user's text when the
turn must end.
"""
import json

from micropython import const

from mimi import pick

_CHECKS_REPEAT_MAX = const(3)
_CHECKS_REPEAT_WINDOW = const(20)
_CHECKS_CUTS_MAX = const(2)  # cut replies in one turn before the user is told

# what the model (cut, repeat) or the user (the others) reads, by key
_MSG = const("|cut not run: your reply reached the length limit (%d tokens) inside this call, so its arguments "
             "were cut off and nothing was changed. Make it again in smaller pieces (a long file: write_file a "
             "first part, then add the rest with edit_file, one part per call)"
             "|repeat not run: this exact call (%s with the same arguments) was already made %d times in this turn "
             "and its result will not change. Answer with what you have, or try something different"
             "|cut_user [My reply kept reaching the length limit in the middle of a tool call (%s), so I did not "
             "run it. Ask me to do it in smaller steps.]"
             "|repeat_user [I stopped: I kept making the same call (%s) without getting further. Tell me what "
             "to try differently.]|")


class Checks:
    """The checks of one turn (module doc)."""

    def __init__(self):
        self.recent = []  # "name args" of the turn's last calls, oldest first
        self.cuts = 0
        self.warned = False  # the model was told about a repeat
        self.stop = None  # the text for the user when the turn must end

    def cut(self, calls, max_tokens):
        """Mark every call of a reply cut by the length limit: not run, arguments dropped."""
        self.cuts += 1
        for c in calls:
            c["input"] = {}
            c["error"] = pick(_MSG, "cut") % max_tokens
        if self.cuts >= _CHECKS_CUTS_MAX:
            self.stop = pick(_MSG, "cut_user") % ", ".join([c.get("name", "") for c in calls][:3])

    def repeat(self, name, args):
        """Count the call ``name(args)``; the error text when it must not run, else None."""
        try:
            k = "%s %s" % (name, json.dumps(sorted(args.items()) if isinstance(args, dict) else args))
        except (TypeError, ValueError):
            k = "%s %r" % (name, args)
        r = self.recent
        r.append(k)
        if len(r) > _CHECKS_REPEAT_WINDOW:
            r.pop(0)
        n = r.count(k)
        if n < _CHECKS_REPEAT_MAX:
            return None
        if self.warned:
            self.stop = pick(_MSG, "repeat_user") % name
        self.warned = True
        return pick(_MSG, "repeat") % (name, n - 1)
