// Small statistics and formatting helpers shared by the benchmarks.
'use strict';

function median(values) {
	const sorted = [...values].sort((a, b) => a - b);
	const mid = Math.floor(sorted.length / 2);
	return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Nearest-rank percentile (p in 0..100) of unsorted values. */
function percentile(values, p) {
	if (values.length === 0) return NaN;
	const sorted = [...values].sort((a, b) => a - b);
	const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
	return sorted[rank];
}

function fmt(n) {
	return Math.round(n).toLocaleString('en-US');
}

// Rounded down, so a ratio just under a target never prints as the target.
function fmtRatio(x, digits = 3) {
	const scale = 10 ** digits;
	return (Math.floor(x * scale) / scale).toFixed(digits);
}

function fmtMs(ms, digits = 1) {
	return Number.isFinite(ms) ? ms.toFixed(digits) : '–';
}

/** A Markdown table: the first `textColumns` columns left-aligned, the numbers after them right-aligned. */
function printTable(header, rows, { textColumns = 1, write = console.log } = {}) {
	const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => String(row[i]).length)));
	const left = (i) => i < textColumns;
	const line = (cells) => `| ${cells.map((c, i) => (left(i) ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join(' | ')} |`;
	write(line(header));
	write(`|${widths.map((w, i) => (left(i) ? '-'.repeat(w + 2) : '-'.repeat(w + 1) + ':')).join('|')}|`);
	for (const row of rows) write(line(row));
}

/** Rotates a list by `by` places: round r runs the sides in a different order (no side always first). */
function rotate(list, by) {
	const k = ((by % list.length) + list.length) % list.length;
	return [...list.slice(k), ...list.slice(0, k)];
}

/** `uptime`'s load averages, recorded with every run (the machine is shared). */
function loadAverage() {
	const os = require('node:os');
	return os
		.loadavg()
		.map((x) => x.toFixed(2))
		.join(', ');
}

module.exports = {
	median,
	percentile,
	fmt,
	fmtRatio,
	fmtMs,
	printTable,
	rotate,
	loadAverage,
};
