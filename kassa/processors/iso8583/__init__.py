"""The acquirer link of CONTRACT §15, ISO 8583:1987 over TCP, in pieces that change for different reasons:
``framing`` puts messages on a stream (a 2-byte length before each), ``dialect`` encodes and decodes them
(pyiso8583) by a dialect held as data in ``dialects/`` (field formats, what each message kind carries, what
field 39 means). The acquirer host that speaks it without a bank is ``kassa.sandbox.acquirer_host``."""
