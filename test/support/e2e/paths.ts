import path from 'node:path';
import { REPO_ROOT } from '../stack/n8nStack';
import type { Topology } from './tags';

export const E2E_ROOT: string = process.env.E2E_WORK_ROOT ?? path.join(REPO_ROOT, '.e2e');
export const STATE_FILE: string = path.join(E2E_ROOT, 'state.json');

/** What globalSetup writes to STATE_FILE for the test files: where the running stack is and what it runs. */
export interface E2eState {
	topology: Topology;
	controlUrl: string;
	redis: { host: string; port: number; pid: number } | null;
	baseUrl: string;
	appUrl: string;
	n8nDbUrl: string;
	n8nDir: string;
	n8nVersion: string;
	workDir: string;
	logFile: string;
	packageDir: string;
	userFolder: string;
	nodeBin: string;
	cliSpec: { n8nBin: string; cwd: string; env: Record<string, string> };
	app: { host: string; port: number; user: string; password: string; database: string };
	setupSeconds: number;
}
