/** The part of autocannon's API the benchmark uses (the package ships no types). */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  namespace autocannon {
    interface Options {
      url: string;
      connections?: number;
      pipelining?: number;
      amount?: number;
      duration?: number;
      timeout?: number;
      method?: string;
      headers?: Record<string, string>;
      title?: string;
    }
    interface Histogram {
      average: number;
      mean: number;
      stddev: number;
      min: number;
      max: number;
      total: number;
      p50: number;
      p90: number;
      p97_5: number;
      p99: number;
    }
    interface Result {
      title?: string;
      url: string;
      errors: number;
      timeouts: number;
      non2xx: number;
      duration: number;
      start: Date;
      finish: Date;
      connections: number;
      requests: Histogram & { sent: number };
      latency: Histogram;
      throughput: Histogram;
      '2xx': number;
    }
    interface Instance extends EventEmitter {
      stop(): void;
    }
  }
  function autocannon(opts: autocannon.Options, cb: (err: Error | null, result: autocannon.Result) => void): autocannon.Instance;
  export = autocannon;
}
