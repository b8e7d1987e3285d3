#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Where cache-proxy's CPU time goes: reads `perf script | swift demangle --simplified` on stdin
and charges each sample to the layer of the frame nearest its leaf that belongs to one.

    perf record -e cpu-clock -g -p PID -o perf.data -- sleep 6
    perf script -i perf.data | swift demangle --simplified | scripts/perf-categories.py
"""
import collections
import re
import sys

# (layer, pattern over a frame's symbol), nearest-to-leaf match wins; the order breaks ties.
LAYERS = [
    ("our proxy code (CacheProxyCore)", r"ProxyHandler|ProxyMapping|HopByHop|Conditional\.|CacheStatus|ProxyMetrics|RangeRule|FastHit\.|EncodedHit|HitHeads|EncoderBypass|HitBodyBuffers"),
    ("caching client + cache lookup", r"CachingHTTPClient|ResponseCache|ResponseLookup|TieredCache|MemoryTier|MemoryShard|StoredRecord|FreshnessFacts|CacheRules|SingleFlight|VaryRule|VariantIndex"),
    ("HTTP/1 parse (NIO llhttp)", r"HTTPDecoder|llhttp|BetterHTTPParser"),
    ("HTTP/1 encode (NIO)", r"HTTPResponseEncoder"),
    ("HTTPTypes <-> NIOHTTP1 conversion", r"HTTP1ToHTTPServerCodec|HTTPRequest\.init|HTTPFields\(|HTTPHeaders\.init"),
    ("HummingbirdCore + NIOAsyncChannel bridge", r"NIOAsyncChannel|NIOAsyncWriter|NIOThrowingAsyncSequenceProducer|NIOAsyncSequenceProducer|HTTPChannelHandler|HTTPConnectionStateHandler|HummingbirdCore|RequestBody|ResponseWriter|handleHTTP"),
    ("Swift concurrency runtime", r"swift_job_run|swift_task|swift::AsyncTask|swift_continuation|_dispatch"),
]
KERNEL = [
    ("kernel: socket write", r"writev|tcp_sendmsg"),
    ("kernel: socket read", r"sys_read|tcp_recvmsg|sock_read_iter|ksys_read"),
    ("kernel: epoll / futex / scheduling", r"epoll|futex|schedule"),
]

def classify(frames):
    if frames and frames[0].endswith("[k]"):
        joined = " ".join(frames)
        for name, pattern in KERNEL:
            if re.search(pattern, joined):
                return name
        return "kernel: other"
    for frame in frames:
        for name, pattern in LAYERS:
            if re.search(pattern, frame):
                return name
    return "other (NIO channel, allocator, runtime)"

counts = collections.Counter()
total = 0
for block in sys.stdin.read().split("\n\n"):
    lines = [line.strip() for line in block.strip().split("\n")[1:] if line.strip()]
    if not lines:
        continue
    frames = []
    for line in lines:
        parts = line.split(" ", 1)
        symbol = parts[1] if len(parts) > 1 else parts[0]
        frames.append(symbol + (" [k]" if "kernel" in symbol or "([kernel" in line else ""))
    counts[classify(frames)] += 1
    total += 1
for name, count in counts.most_common():
    print(f"| {name} | {100 * count / total:.1f}% |")
print(f"| samples | {total} |")
