// Small statistics and formatting helpers shared by the benchmarks.
import os from 'node:os';

export function median(values: number[]): number {
	const sorted = [...values].sort((a, b) => a - b);
	const mid = Math.floor(sorted.length / 2);
	return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Nearest-rank percentile (p in 0..100) of unsorted values. */
export function percentile(values: number[], p: number): number {
	if (values.length === 0) return NaN;
	const sorted = [...values].sort((a, b) => a - b);
	const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
	return sorted[rank];
}

export function fmt(n: number): string {
	return Math.round(n).toLocaleString('en-US');
}

// Rounded down, so a ratio just under a target never prints as the target.
export function fmtRatio(x: number, digits = 3): string {
	const scale = 10 ** digits;
	return (Math.floor(x * scale) / scale).toFixed(digits);
}

export function fmtMs(ms: number, digits = 1): string {
	return Number.isFinite(ms) ? ms.toFixed(digits) : '–';
}

export interface TableOptions {
	textColumns?: number;
	write?: (line: string) => void;
}

/** A Markdown table: the first `textColumns` columns left-aligned, the numbers after them right-aligned. */
export function printTable(
	header: string[],
	rows: Array<Array<string | number>>,
	{ textColumns = 1, write = console.log }: TableOptions = {},
): void {
	const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => String(row[i]).length)));
	const left = (i: number) => i < textColumns;
	const line = (cells: Array<string | number>) =>
		`| ${cells.map((c, i) => (left(i) ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join(' | ')} |`;
	write(line(header));
	write(`|${widths.map((w, i) => (left(i) ? '-'.repeat(w + 2) : '-'.repeat(w + 1) + ':')).join('|')}|`);
	for (const row of rows) write(line(row));
}

/** Rotates a list by `by` places: round r runs the sides in a different order (no side always first). */
export function rotate<T>(list: readonly T[], by: number): T[] {
	const k = ((by % list.length) + list.length) % list.length;
	return [...list.slice(k), ...list.slice(0, k)];
}

/** `uptime`'s load averages, recorded with every run (the machine is shared). */
export function loadAverage(): string {
	return os
		.loadavg()
		.map((x) => x.toFixed(2))
		.join(', ');
}
