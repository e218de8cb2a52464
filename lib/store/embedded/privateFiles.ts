import { chmodSync, closeSync, constants, mkdirSync, openSync, statSync } from 'node:fs';
import path from 'node:path';

/** The store's folder: its owner only (the files hold keys and stored payloads, often personal data). */
export const PRIVATE_FOLDER_MODE = 0o700;
/** The store file and SQLite's -wal and -shm beside it: read and written by their owner only. */
export const PRIVATE_FILE_MODE = 0o600;
/** The files SQLite keeps beside the store file in WAL mode. */
export const WAL_COMPANIONS = ['-wal', '-shm'] as const;
// The sticky bit: a folder many users share (/tmp), whose entries only their owners may remove.
const STICKY_BIT = 0o1000;

/**
 * Makes `file` and its folder private before SQLite opens it, whatever the process umask: the
 * folder created 0700, the file created 0600, and either tightened to that when this process's
 * user owns it and it is more open (made by an older version, or under a loose umask). The store
 * file is created here rather than by SQLite because SQLite creates the -wal and -shm with the
 * mode of the database file (its Unix VFS copies it, umask aside): a 0600 file gets 0600
 * companions. Existing companions are tightened too.
 *
 * A folder with the sticky bit (a shared folder such as /tmp) is left as it is: it is meant to be
 * open, and the file's own mode protects it there.
 */
export function preparePrivateFile(file: string): void {
	const folder = path.dirname(file);
	mkdirSync(folder, { recursive: true, mode: PRIVATE_FOLDER_MODE });
	restrictOwnFolder(folder);
	// O_CREAT without O_EXCL: another process creating the file at the same moment is no error.
	closeSync(openSync(file, constants.O_RDWR | constants.O_CREAT, PRIVATE_FILE_MODE));
	restrictOwnFile(file);
	for (const suffix of WAL_COMPANIONS) restrictOwnFile(`${file}${suffix}`);
}

function restrictOwnFolder(folder: string): void {
	const stats = statSync(folder);
	if (!ownedByThisUser(stats.uid) || stats.mode & STICKY_BIT) return;
	if ((stats.mode & 0o777) !== PRIVATE_FOLDER_MODE) chmodSync(folder, PRIVATE_FOLDER_MODE);
}

/** Tightens a file this user owns to 0600; a missing file is left to be created. */
export function restrictOwnFile(file: string): void {
	const stats = statSync(file, { throwIfNoEntry: false });
	if (!stats || !ownedByThisUser(stats.uid)) return;
	if ((stats.mode & 0o777) !== PRIVATE_FILE_MODE) chmodSync(file, PRIVATE_FILE_MODE);
}

// Where Node has no user ids (Windows), file modes mean little: nothing to compare.
function ownedByThisUser(uid: number): boolean {
	return typeof process.getuid === 'function' && process.getuid() === uid;
}
