"""Circuit breaker: CLOSED -> OPEN after N consecutive failures -> HALF_OPEN after reset_timeout,
admitting exactly one probe whose outcome closes or re-opens the circuit."""
import asyncio

from .logs import get_logger

log = get_logger("app.breaker")

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half_open"


class BreakerOpen(RuntimeError):
    pass


class CircuitBreaker:
    def __init__(self, failure_threshold=3, reset_timeout=1.0, clock=None, name="breaker"):
        self.failure_threshold = failure_threshold
        self.reset_timeout = reset_timeout
        self._clock = clock
        self.name = name
        self.state = CLOSED
        self.failures = 0
        self.opened_at = None
        self._probe_in_flight = False
        self.transitions = []

    def now(self):
        return self._clock() if self._clock else asyncio.get_running_loop().time()

    def _set(self, state):
        if state != self.state:
            self.transitions.append((self.state, state))
            log.info("breaker.transition", name=self.name, old=self.state, new=state)
            self.state = state

    def _admit(self):
        if self.state == OPEN and self.now() - self.opened_at >= self.reset_timeout:
            self._set(HALF_OPEN)
        if self.state == CLOSED:
            return False
        if self.state == HALF_OPEN and not self._probe_in_flight:
            self._probe_in_flight = True
            return True
        raise BreakerOpen(f"{self.name} is {self.state}")

    async def call(self, fn, *args):
        probe = self._admit()
        try:
            result = await fn(*args)
        except asyncio.CancelledError:
            if probe:
                self._probe_in_flight = False
            raise
        except Exception:
            self._on_failure(probe)
            raise
        self._on_success(probe)
        return result

    def _on_failure(self, probe):
        if probe:
            self._probe_in_flight = False
        self.failures += 1
        if probe or self.failures >= self.failure_threshold:
            self.opened_at = self.now()
            self._set(OPEN)

    def _on_success(self, probe):
        if probe:
            self._probe_in_flight = False
        self.failures = 0
        self._set(CLOSED)
