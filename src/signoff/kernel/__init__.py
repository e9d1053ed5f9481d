"""The approval kernel: how one tool call becomes a decision, and a decision a single run.

``gate.Gate`` is the front: a façade over parts it composes, each a class given its own
dependencies, each doing its reads and writes in one store transaction with its audit
events. Every public method is on ``Gate`` and says which part does it:

* ``proposing.Proposer`` — the verdict, and for an ask the durable request (``requests``
  builds it); ``verdicts`` batches the audit of calls that changed nothing;
* ``deciding.Decider`` — approve, reject, edit, respond; ``ownership`` says who may not
  (no self-approval by any route); ``grants`` the standing approvals a decision gives;
  ``bulk.BulkDecider`` approves many calls of one shape, each by its own decision;
* ``cancelling.Canceller`` — withdrawing a request on its asker's or an admin's word;
* ``reading.Reader`` — a request as it stands (expired when overdue), and waiting on it;
* ``execution.Executor`` — re-validate, claim with a fencing token, run once, record;
  ``tools`` holds what the gate knows of a tool it runs, ``wrapping`` the ``@gate.tool``
  wrapper; ``outcomes`` what it answers;
* ``recovery.Recoverer`` — after a crash: expire, mark ``unknown``, finish approved work;
* ``admin.Accounts`` and ``sessions.SignIn`` — users, their lifecycle, modes, login
  links, sessions.
* ``signing.Signing`` — the gate's key, published for every verifier, and its rotation;
  ``receipts.Receipts`` — the signed receipt of each approval, written in the
  transaction that approves (``Decider`` calls it), and read back for a claim;
* ``write_evidence`` — a write's evidence (the diff approvers read), ``file_state`` — a
  file read the safe way and the version a request binds it by.

``written_requests`` keeps the pending requests this process wrote, so that a decision
on one may go unread (``fast_paths.decide_as_written``).

``fast_paths`` holds the shortcuts of deciding and proposing (fewer round trips on
PostgreSQL): each is an optimisation of the rule it stands beside, which it leaves to
decide whenever an assumption fails. ``lifecycle`` is the one table of legal moves every
transition goes through.
``protocol`` is the gate as adapters see it (``GateProtocol``: the ``Gate`` here,
``signoff.remote.Client`` over HTTP).
"""
