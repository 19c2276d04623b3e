import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU time of another process, from /proc: W11 reads workerd's, the process Miniflare spawns to run the
 * Workers build. Per thread, /proc/<pid>/task/<tid>/schedstat's first field is the time spent on a CPU in
 * nanoseconds (the scheduler's own sum), so one request's CPU can be read around it; /proc/<pid>/stat's
 * utime + stime (clock ticks, 10 ms here) is the coarse whole-process figure, kept as a cross-check.
 */

/** The first field of a schedstat line: nanoseconds on a CPU. NaN when the text is not a schedstat line. */
export function parseSchedstat(text: string): number {
  const m = /^\s*(\d+)\s+\d+\s+\d+\s*$/.exec(text);
  return m ? Number(m[1]) : Number.NaN;
}

/** A /proc/<pid>/stat line's command, parent pid and utime + stime in clock ticks (the command may hold spaces and parentheses). */
export function parseStat(text: string): { comm: string; ppid: number; cpuTicks: number } | null {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return null;
  // After the command: state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime …
  const rest = text.slice(close + 2).trim().split(/\s+/);
  if (rest.length < 13) return null;
  const ppid = Number(rest[1]);
  const cpuTicks = Number(rest[11]) + Number(rest[12]);
  if (!Number.isFinite(ppid) || !Number.isFinite(cpuTicks)) return null;
  return { comm: text.slice(open + 1, close), ppid, cpuTicks };
}

/** The pids whose parent is `ppid` and whose command is `comm`. */
export function childrenNamed(ppid: number, comm: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const st = parseStat(readFileSync(`/proc/${name}/stat`, 'utf8'));
      if (st && st.ppid === ppid && st.comm === comm) out.push(Number(name));
    } catch {
      // gone while listing
    }
  }
  return out;
}

/** Nanoseconds on a CPU of every live thread of `pid` (threads that exited are not counted: see processTicks). */
export function threadsCpuNs(pid: number): number {
  let total = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const ns = parseSchedstat(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8'));
      if (Number.isFinite(ns)) total += ns;
    } catch {
      // the thread exited while listing
    }
  }
  return total;
}

/** utime + stime of the whole process (exited threads included), in ms. */
export function processCpuMs(pid: number, ticksPerSecond = 100): number {
  const st = parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  if (!st) throw new Error(`/proc/${pid}/stat does not parse`);
  return (st.cpuTicks * 1000) / ticksPerSecond;
}
