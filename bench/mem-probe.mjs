/**
 * Preloaded into the benchmark's server and reference processes (`node --import ./bench/mem-probe.mjs`):
 * on SIGUSR2 writes one JSON line `{"event":"bench_memory", ...}` to stdout with process.memoryUsage()
 * (rss, heapTotal, heapUsed, external, arrayBuffers) and V8's heap totals, in bytes. With `gc` in the
 * argument (`KR_BENCH_GC=1` in the environment and node's --expose-gc) it collects garbage first; with
 * KR_BENCH_HEAPSNAPSHOT_DIR set it also writes a heap snapshot there. Nothing
 * runs until the signal arrives, so the measured process does no extra work.
 */
import { getHeapStatistics, writeHeapSnapshot } from 'node:v8';
import { join } from 'node:path';

let seq = 0;
process.on('SIGUSR2', () => {
  const gc = globalThis.gc;
  if (process.env.KR_BENCH_GC === '1' && typeof gc === 'function') gc();
  const m = process.memoryUsage();
  const h = getHeapStatistics();
  // KR_BENCH_HEAPSNAPSHOT_DIR: also a heap snapshot per probe (slow; for finding what holds memory).
  const dir = process.env.KR_BENCH_HEAPSNAPSHOT_DIR;
  if (dir) writeHeapSnapshot(join(dir, `probe-${process.pid}-${seq + 1}.heapsnapshot`));
  process.stdout.write(
    `${JSON.stringify({
      event: 'bench_memory',
      seq: ++seq,
      ...m,
      mallocedMemory: h.malloced_memory,
      peakMallocedMemory: h.peak_malloced_memory,
      totalHeapSize: h.total_heap_size,
    })}\n`,
  );
});
