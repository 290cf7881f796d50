"""The exec protocol's loop (adapters/README.md, "The exec protocol"): handshake, `run REQ RES`, `quit`."""
import os
import sys

from .rejections import answer_for, one_line

LOST_CONTEXT = ("CUDA error", "Triton Error [CUDA]")  # errors after which a CUDA context is unusable


def reply(line, stream=None):
    stream = stream or sys.stdout
    stream.write(line + "\n")
    stream.flush()


def serve(handshake, handle, table, cuda=False, lines=None):
    """Answers requests until `quit` or end of input: handle(request, results) runs one, anything it
    raises is answered through the rejection table (one bad case never ends the adapter). On CUDA, an
    error that leaves the context unusable ends the process (status 3) instead: kda-oracle fails that
    case and starts a fresh adapter for the next. While it serves, sys.stdout is stderr: what a library
    prints cannot garble the protocol."""
    answers, sys.stdout = sys.stdout, sys.stderr
    try:
        answer_requests(handshake, handle, table, cuda, sys.stdin if lines is None else lines, answers)
    finally:
        sys.stdout = answers


def answer_requests(handshake, handle, table, cuda, lines, answers):
    reply(handshake, answers)
    for line in lines:
        words = line.split()
        if words == ["quit"]:
            return
        if len(words) != 3 or words[0] != "run":
            reply("error unknown request: " + " ".join(words)[:200], answers)
            continue
        try:
            handle(words[1], words[2])
            reply("ok", answers)
        except BrokenPipeError:
            raise
        except Exception as e:
            answer = answer_for(e, table)
            if cuda and any(lost in answer for lost in LOST_CONTEXT):
                print(f"kda_adapter: {one_line(answer)}; exiting", file=sys.stderr)
                os._exit(3)
            reply(answer, answers)
