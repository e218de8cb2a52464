import { UnsafeStorageError } from '../../lib/store/embedded/errors';
import { assertLocalStorage, isUnsafeFilesystem, mountOf, parseMountInfo } from '../../lib/store/embedded/storageCheck';

// Lines as Linux writes them in /proc/self/mountinfo (proc(5)), from real hosts and containers.
const MOUNTINFO = [
	'23 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw,errors=remount-ro',
	'1094 23 0:70 / /var/lib/docker/overlay2/abc/merged rw,relatime - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/X,upperdir=/var/lib/docker/overlay2/abc/diff,workdir=/var/lib/docker/overlay2/abc/work',
	'310 23 0:53 / /mnt/nas rw,relatime shared:160 - nfs4 nas.local:/export/n8n rw,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard,proto=tcp,timeo=600,retrans=2,sec=sys,clientaddr=10.0.0.5,local_lock=none,addr=10.0.0.2',
	'311 23 0:54 / /mnt/share rw,relatime shared:161 - cifs //fileserver/share rw,vers=3.1.1,cache=strict,username=n8n,uid=1000,noforceuid,gid=1000,noforcegid,addr=10.0.0.3,file_mode=0755,dir_mode=0755,soft,nounix,serverino,mapposix,rsize=4194304,wsize=4194304,bsize=1048576,echo_interval=60,actimeo=1',
	'312 23 0:55 / /home/node/remote rw,nosuid,nodev,relatime shared:162 - fuse.sshfs n8n@backup:/srv rw,user_id=1000,group_id=1000',
	// A local disk mounted inside the NFS share: its files are local again.
	'313 310 259:3 / /mnt/nas/local\\040disk rw,relatime shared:163 - ext4 /dev/nvme1n1 rw',
	// A container volume (bind mount of a host folder on ext4) over the container's overlay root.
	'1200 1094 259:2 /var/lib/docker/volumes/n8n_data/_data /home/node/.n8n rw,relatime - ext4 /dev/nvme0n1p2 rw,errors=remount-ro',
].join('\n');

describe('parseMountInfo', () => {
	it('reads mount point, type and source; unescapes octal escapes in paths', () => {
		const mounts = parseMountInfo(MOUNTINFO);
		expect(mounts.map((mount) => [mount.mountPoint, mount.fsType])).toEqual([
			['/', 'ext4'],
			['/var/lib/docker/overlay2/abc/merged', 'overlay'],
			['/mnt/nas', 'nfs4'],
			['/mnt/share', 'cifs'],
			['/home/node/remote', 'fuse.sshfs'],
			['/mnt/nas/local disk', 'ext4'],
			['/home/node/.n8n', 'ext4'],
		]);
		expect(mounts[2].source).toBe('nas.local:/export/n8n');
	});

	it('skips lines it cannot read', () => {
		expect(parseMountInfo('garbage\n\n1 2 3\n' + MOUNTINFO.split('\n')[0])).toHaveLength(1);
	});
});

describe('mountOf: the longest mount point containing the path', () => {
	const mounts = parseMountInfo(MOUNTINFO);
	it.each([
		['/home/node/.n8n/idempotency/keys.sqlite', 'ext4', '/home/node/.n8n'],
		['/mnt/nas/n8n/keys.sqlite', 'nfs4', '/mnt/nas'],
		['/mnt/nas/local disk/keys.sqlite', 'ext4', '/mnt/nas/local disk'],
		['/mnt/nasty/keys.sqlite', 'ext4', '/'],
		['/mnt/share/keys.sqlite', 'cifs', '/mnt/share'],
		['/home/node/remote/x/keys.sqlite', 'fuse.sshfs', '/home/node/remote'],
		['/tmp/keys.sqlite', 'ext4', '/'],
	])('%s is on %s', (file, fsType, mountPoint) => {
		expect(mountOf(file, mounts)).toMatchObject({ fsType, mountPoint });
	});

	it('of two mounts on one point, the later one (on top) counts', () => {
		const stacked = parseMountInfo(`${MOUNTINFO}\n400 23 0:60 / /mnt/share rw - ext4 /dev/sdb1 rw`);
		expect(mountOf('/mnt/share/keys.sqlite', stacked)).toMatchObject({ fsType: 'ext4' });
	});
});

describe('isUnsafeFilesystem', () => {
	it.each(['nfs', 'nfs4', 'cifs', 'smb3', 'smbfs', 'fuse', 'fuse.sshfs', 'fuse.rclone', '9p', 'ceph', 'glusterfs'])(
		'%s is refused',
		(fsType) => {
			expect(isUnsafeFilesystem(fsType)).toBe(true);
		},
	);
	it.each(['ext4', 'xfs', 'btrfs', 'overlay', 'tmpfs', 'zfs', 'apfs'])('%s is local', (fsType) => {
		expect(isUnsafeFilesystem(fsType)).toBe(false);
	});
});

describe('assertLocalStorage', () => {
	// The file's folder is resolved on this machine; the mount table is the test's.
	const tableWithRootOn = (fsType: string) => `23 1 0:99 / / rw,relatime - ${fsType} server:/export rw`;

	it('refuses a file on NFS with a message naming the filesystem, locks and WAL, and the fix', () => {
		let caught: unknown;
		try {
			assertLocalStorage('/tmp/idempotency/keys.sqlite', tableWithRootOn('nfs4'));
		} catch (error) {
			caught = error;
		}
		expect(caught).toBeInstanceOf(UnsafeStorageError);
		expect((caught as Error).message).toMatch(/nfs4 filesystem/);
		expect((caught as Error).message).toMatch(/locks and WAL do not work/);
		expect((caught as Error).message).toMatch(/local disk.*or choose the Postgres store/);
	});

	it('accepts a file on a local filesystem', () => {
		expect(() => assertLocalStorage('/tmp/idempotency/keys.sqlite', tableWithRootOn('ext4'))).not.toThrow();
	});
});
