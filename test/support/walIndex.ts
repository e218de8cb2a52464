import { readFileSync } from 'node:fs';

/**
 * What a SQLite file's WAL index (its -shm file, https://sqlite.org/walformat.html) says: `last`,
 * mxFrame, the last valid frame, at byte 16; `copied`, nBackfill, how many frames a checkpoint has
 * copied into the file, at byte 96.
 */
export function walFrames(file: string): { last: number; copied: number } {
	const shm = readFileSync(`${file}-shm`);
	return { last: shm.readUInt32LE(16), copied: shm.readUInt32LE(96) };
}
