"""The stock decode paths: the shipped mlx_lm code, unmodified, observed from outside.

* headline and reference_pair: `mlx_lm.stream_generate` with its default greedy sampler,
  `max_tokens = run_policy.max_new_tokens` and the job's `prefill_step_size` (mlx_lm's default,
  2048, unless the session job sets another). Per-token event times are stamped as each response
  arrives. `mx.synchronize()` after the last response drains the look-ahead forward that
  stream_generate dispatched and never used (on CPU it ends without a final synchronize);
  it runs after the last stamp, so it is outside every interval, and is counted in
  `unused_forwards`.
* fixed_continuation: the shipped model call with mlx_lm's prompt cache (`make_prompt_cache`),
  prefilled as `generate_step` prefills: `prompt[:-1]` in chunks of the job's
  `prefill_step_size`, each chunk's caches evaluated, then the last prompt token alone, whose logits
  give the first token; then one continuation token per step; each step's time ends when its
  logits are evaluated; argmax and top-2 are taken on the host after the stamp.

The model is wrapped in `CountingModel`, a thin proxy whose `__call__` counts forwards and
polls for cancellation and the deadline before each one (req/protocol.md, "Cancellation").
"""

import time

import mlx.core as mx
from decode_baseline_worker import prefill_step_size
from decode_baseline_worker.records import host_scores, peak_memory, request_record, start_request, step_record, top2
from mlx_lm import stream_generate
from mlx_lm.models.cache import make_prompt_cache



class ProtocolError(Exception):
    """The shipped code did something this worker's accounting does not expect."""


class CountingModel:
    """Forwards every attribute to the model; counts and classifies forward calls and polls
    the protocol's stop flags before each, so a stop never waits for more than the forward
    already running."""

    def __init__(self, model):
        self._model = model
        self._ctx = None
        self._prompt_len = 0
        self._separate_seed = True
        self.fed = 0
        self.calls = 0
        self.prefill_chunks = 0
        self.seed_forwards = 0
        self.decode_forwards = 0

    def begin(self, prompt_len, ctx, separate_seed):
        """Starts a request: `separate_seed` is True for stream_generate (prompt[:-1] in
        chunks, then the last prompt token alone) and False for a whole-prompt prefill."""
        self._ctx = ctx
        self._prompt_len = prompt_len
        self._separate_seed = separate_seed
        self.fed = self.calls = self.prefill_chunks = self.seed_forwards = self.decode_forwards = 0

    def _site(self, n):
        L = self._prompt_len
        prefill_end = L - 1 if self._separate_seed else L
        if self.fed < prefill_end and self.fed + n <= prefill_end:
            return "before_prefill_chunk"
        if self._separate_seed and self.fed == L - 1 and n == 1:
            return "before_seed_forward"
        if self.fed >= L and n == 1:
            return "before_decode_step"
        raise ProtocolError(f"unexpected forward of {n} tokens after {self.fed} of a {L}-token prompt")

    def __call__(self, inputs, *args, **kwargs):
        n = inputs.shape[1]
        site = self._site(n)
        self._ctx.poll(site)
        self.calls += 1
        self.fed += n
        if site == "before_prefill_chunk":
            self.prefill_chunks += 1
        elif site == "before_seed_forward":
            self.seed_forwards += 1
        else:
            self.decode_forwards += 1
        return self._model(inputs, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._model, name)


def run_stream(model, tokenizer, job, ctx, want_margins):
    """One headline or reference-pair request through stream_generate."""
    ids = job["prompt_ids"]
    L = len(ids)
    max_tokens = job["run_policy"]["max_new_tokens"]
    prompt = mx.array(ids)
    model.begin(L, ctx, separate_seed=True)
    events = []
    tokens = []
    logprobs = []
    finish_reason = None
    t0 = start_request()
    step_size = prefill_step_size(job)
    for response in stream_generate(model, tokenizer, prompt, max_tokens=max_tokens, prefill_step_size=step_size):
        events.append(time.perf_counter_ns() - t0)
        tokens.append(response.token)
        if want_margins:
            logprobs.append(response.logprobs)
        finish_reason = response.finish_reason
    # Drains the unused look-ahead forward outside every interval.
    peak = peak_memory()
    if not tokens:
        raise ProtocolError("stream_generate produced no token")
    steps = []
    for s in range(1, len(tokens)):
        margin = tie = None
        if want_margins:
            _, margin, tie = top2(host_scores(logprobs[s]))
        steps.append(step_record(L + s, tokens[s], events[s], events[s] - events[s - 1], margin, tie))
    accounted = model.prefill_chunks + model.seed_forwards + len(steps)
    unused = model.calls - accounted
    if model.seed_forwards != 1 or unused != 1:
        raise ProtocolError(
            f"expected prefill chunks + 1 seed + {len(steps)} steps + 1 unused look-ahead forward, "
            f"found {model.prefill_chunks} chunks, {model.seed_forwards} seeds, {model.calls} calls"
        )
    return request_record(L, events[0], tokens[0], steps, model.calls, finish_reason, peak, unused_forwards=unused)


def run_fixed_continuation(model, job, ctx):
    """One fixed-continuation request through the shipped model call and prompt cache."""
    ids = job["prompt_ids"]
    continuation = job["continuation"]
    L = len(ids)
    cache = make_prompt_cache(model)
    model.begin(L, ctx, separate_seed=False)
    t0 = start_request()
    start, step_size = 0, prefill_step_size(job)
    while L - start > 1:
        n = min(step_size, L - 1 - start)
        model(mx.array(ids[start : start + n])[None], cache=cache)
        mx.eval([c.state for c in cache])
        start += n
    logits = model(mx.array(ids[L - 1 :])[None], cache=cache)[:, -1, :]
    mx.eval(logits)
    first_ns = time.perf_counter_ns() - t0
    first_token, _, _ = top2(host_scores(logits[0]))
    steps = []
    for s, token in enumerate(continuation, start=1):
        begin = time.perf_counter_ns()
        logits = model(mx.array([[token]]), cache=cache)[:, -1, :]
        mx.eval(logits)
        end = time.perf_counter_ns()
        argmax, margin, tie = top2(host_scores(logits[0]))
        steps.append(step_record(L + s, argmax, end - t0, end - begin, margin, tie))
    peak = peak_memory()
    unused = model.calls - model.prefill_chunks - len(steps)
    return request_record(L, first_ns, first_token, steps, model.calls, "length", peak, unused_forwards=unused)
