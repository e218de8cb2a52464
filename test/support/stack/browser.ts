// The browser the editor-facing tests drive: Debian's Chromium through playwright-core (a dev
// dependency that never downloads a browser). Found where the machine has it (CHROMIUM, then the
// usual paths and PATH); installed with apt when missing and we are root with apt, as .ci/run's
// clean machine is, like queue mode's redis-server; otherwise the test stops, naming what to type.
import fs from 'node:fs';
import { aptInstall, commandPath, machineFacts } from './redisServer';

const CHROMIUM_PATHS = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];

function findChromium(env: NodeJS.ProcessEnv = process.env): string | null {
	const found = [env.CHROMIUM, ...CHROMIUM_PATHS].find((file): file is string => Boolean(file) && fs.existsSync(file as string));
	return found ?? commandPath('chromium');
}

/** The Chromium binary to drive; throws, with the command to type, when it is missing and cannot be installed here. */
export function ensureChromium({ log = () => {} }: { log?: (line: string) => void } = {}): string {
	const found = findChromium();
	if (found) return found;
	const { isRoot, hasApt, hasSudo } = machineFacts();
	if (isRoot && hasApt) {
		const failure = aptInstall('chromium', { log });
		const installed = findChromium();
		if (installed) return installed;
		throw new Error(`could not install Debian's chromium with apt${failure ? `: ${failure}` : ''}`);
	}
	const command = hasApt ? `${hasSudo ? 'sudo ' : ''}apt-get install -y chromium` : 'CHROMIUM=/path/to/chromium';
	throw new Error(`Chromium is not installed; the browser tests need it (never a downloaded browser). Type: ${command}`);
}
