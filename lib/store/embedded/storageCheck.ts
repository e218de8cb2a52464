import { existsSync, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';

import { UnsafeStorageError } from './errors';

/** One line of /proc/self/mountinfo: where a filesystem is mounted, and its type. */
export interface Mount {
	mountPoint: string;
	fsType: string;
	source: string;
}

// Filesystems where SQLite's POSIX locks or its WAL shared memory (mmap of the -shm file) are not
// shared between all the processes that open the file: network and cluster filesystems, and FUSE,
// whose lock support is up to each user-space implementation.
const UNSAFE_TYPES = new Set([
	'nfs',
	'nfs4',
	'cifs',
	'smb3',
	'smbfs',
	'smb',
	'ncpfs',
	'9p',
	'ceph',
	'glusterfs',
	'lustre',
	'gpfs',
	'afs',
	'davfs',
	'beegfs',
	'fuse',
]);

/** Whether SQLite's locks and WAL cannot be trusted on this filesystem type. */
export function isUnsafeFilesystem(fsType: string): boolean {
	return UNSAFE_TYPES.has(fsType) || fsType.startsWith('fuse.');
}

/** The kernel writes space, tab, newline and backslash in mount points as octal escapes (\040 …). */
function unescapeMountField(field: string): string {
	return field.replace(/\\([0-7]{3})/g, (_match, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/**
 * The mounts of /proc/self/mountinfo (proc(5)): `id parent major:minor root mountpoint options
 * [optional fields…] - fstype source superoptions`. Lines it cannot read are skipped.
 */
export function parseMountInfo(text: string): Mount[] {
	const mounts: Mount[] = [];
	for (const line of text.split('\n')) {
		const fields = line.trim().split(' ');
		const separator = fields.indexOf('-');
		if (separator < 6 || fields.length < separator + 3) continue;
		mounts.push({
			mountPoint: unescapeMountField(fields[4]),
			fsType: fields[separator + 1],
			source: unescapeMountField(fields[separator + 2]),
		});
	}
	return mounts;
}

/**
 * The mount a real (symlink-free, absolute) path lives on: the longest mount point that contains
 * it; of mounts on the same point, the last one (it hides the earlier ones).
 */
export function mountOf(realPath: string, mounts: Mount[]): Mount | undefined {
	let best: Mount | undefined;
	for (const mount of mounts) {
		const point = mount.mountPoint;
		const contains = point === '/' || realPath === point || realPath.startsWith(point.endsWith('/') ? point : `${point}/`);
		if (contains && (!best || point.length >= best.mountPoint.length)) best = mount;
	}
	return best;
}

/** The real path of `target`, or of its nearest existing folder (the file may not exist yet). */
export function realPathOfNearest(target: string): string {
	let current = path.resolve(target);
	const rest: string[] = [];
	while (!existsSync(current)) {
		const parent = path.dirname(current);
		if (parent === current) break;
		rest.unshift(path.basename(current));
		current = parent;
	}
	return path.join(realpathSync(current), ...rest);
}

/**
 * Refuses a store file on a network or FUSE filesystem (UnsafeStorageError). Linux only: where
 * /proc/self/mountinfo cannot be read (macOS, Windows) the check is skipped.
 */
export function assertLocalStorage(file: string, mountInfoText?: string): void {
	let text = mountInfoText;
	if (text === undefined) {
		try {
			text = readFileSync('/proc/self/mountinfo', 'utf8');
		} catch {
			return;
		}
	}
	const real = realPathOfNearest(path.dirname(path.resolve(file)));
	const mount = mountOf(real, parseMountInfo(text));
	if (mount && isUnsafeFilesystem(mount.fsType)) {
		throw new UnsafeStorageError(
			`The embedded key store file ${file} would be on a ${mount.fsType} filesystem (${mount.source} mounted at ${mount.mountPoint}): SQLite's file locks and WAL do not work reliably there, so two processes could both take the same key. Keep n8n's folder on a local disk (or a container volume on one), or choose the Postgres store.`,
		);
	}
}
