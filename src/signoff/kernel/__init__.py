"""The approval kernel: how one tool call becomes a decision, and a decision a single run.

``gate.Gate`` is the front; it is assembled from one mixin per act, each in its own
module and each doing its reads and writes in one store transaction with its audit
events:

* ``proposing`` — the verdict, and for an ask the durable request (``requests``
  builds it); ``verdicts`` batches the audit of calls that changed nothing;
* ``deciding`` — approve, reject, edit, respond; ``ownership`` says who may not
  (no self-approval by any route);
* ``cancelling`` — withdrawing a request on its asker's or an admin's word;
* ``execution`` — re-validate, claim with a fencing token, run once, record;
  ``tools`` holds what the gate knows of a tool it runs; ``outcomes`` what it answers;
* ``recovery`` — after a crash: expire, mark ``unknown``, finish approved work;
* ``admin`` and ``sessions`` — users, their lifecycle, login links, sessions, modes.
* ``writes`` — a write's evidence (the diff approvers read), ``file_state`` — a file read
  the safe way and the version a request binds it by.

``lifecycle`` is the one table of legal moves every transition goes through.
``protocol`` is the gate as adapters see it (``GateProtocol``: the ``Gate`` here,
``signoff.client.Client`` over HTTP); ``reads`` the thread reads it adds to the ``Gate``.
"""
