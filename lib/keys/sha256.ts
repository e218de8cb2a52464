import { createHash } from 'node:crypto';

/** Lower-case hex SHA-256 of bytes or a UTF-8 string. */
export function sha256Hex(data: Buffer | string): string {
	return createHash('sha256').update(data).digest('hex');
}
