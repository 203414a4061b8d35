/**
 * Facts for a generated fleet, as Facter 4 reports them (os, networking, processors, memory, mountpoints, disks,
 * dmi, ssh, ...): about 150 leaves per node, nested up to five levels, with arrays. The certnames follow the
 * naming of ../shared/bench/inventory/gen_dataset.py (role-NNNN.dcN.example.com). Values derive from a seeded
 * generator, so the same arguments give the same bytes.
 */
import { random } from './topology.js';

const ROLES = ['web', 'app', 'db', 'cache', 'lb', 'mon', 'mq', 'build', 'dns', 'bastion'];
const DCS = ['dc1', 'dc2', 'dc3'];
const ENVIRONMENTS = ['production', 'production', 'production', 'production', 'staging', 'development'];
const RELEASES = [
  { full: '12.5', major: '12', minor: '5', codename: 'bookworm' },
  { full: '11.9', major: '11', minor: '9', codename: 'bullseye' },
];
const CPUS = ['Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz', 'AMD EPYC 7543 32-Core Processor'];
const GiB = 1024 ** 3;

const hex = (rand: () => number, n: number) =>
  Array.from({ length: n }, () => Math.floor(rand() * 16).toString(16)).join('');
const bytes = (n: number) => `${(n / GiB).toFixed(2)} GiB`;

/** A mount point's figures as Facter gives them. */
function mount(rand: () => number, device: string, filesystem: string, size: number) {
  const used = Math.floor(size * (0.05 + rand() * 0.9));
  return {
    available: bytes(size - used),
    available_bytes: size - used,
    capacity: `${((100 * used) / size).toFixed(2)}%`,
    device,
    filesystem,
    options: ['rw', 'relatime', filesystem === 'ext4' ? 'errors=remount-ro' : 'nodev'],
    size: bytes(size),
    size_bytes: size,
    used: bytes(used),
    used_bytes: used,
  };
}

/** A memory pool's figures as Facter gives them. */
function pool(rand: () => number, total: number) {
  const used = Math.floor(total * (0.1 + rand() * 0.8));
  return {
    available: bytes(total - used),
    available_bytes: total - used,
    capacity: `${((100 * used) / total).toFixed(2)}%`,
    total: bytes(total),
    total_bytes: total,
    used: bytes(used),
    used_bytes: used,
  };
}

/** One interface's addresses. */
function iface(ip: string, mac: string | undefined, network: string, netmask: string, mtu: number) {
  return {
    bindings: [{ address: ip, netmask, network }],
    ip,
    ...(mac === undefined ? {} : { mac }),
    mtu,
    netmask,
    network,
  };
}

/** The facts of node `k` of the fleet: certname and environment, and Facter's values. */
export function nodeFacts(k: number, seed = 42): { certname: string; environment: string; values: object } {
  const rand = random(seed * 1_000_003 + k);
  const role = ROLES[Math.floor(rand() * ROLES.length)]!;
  const dc = DCS[k % DCS.length]!;
  const hostname = `${role}-${String(k).padStart(4, '0')}`;
  const domain = `${dc}.example.com`;
  const certname = `${hostname}.${domain}`;
  const environment = ENVIRONMENTS[Math.floor(rand() * ENVIRONMENTS.length)]!;
  const release = RELEASES[rand() < 0.8 ? 0 : 1]!;
  const ip = `10.${DCS.indexOf(dc) + 1}.${(k >> 8) & 255}.${k & 255}`;
  const mac = `52:54:00:${hex(rand, 2)}:${hex(rand, 2)}:${hex(rand, 2)}`;
  const cpus = 2 ** (1 + Math.floor(rand() * 4));
  const model = CPUS[Math.floor(rand() * CPUS.length)]!;
  const memory = cpus * 2 * GiB;
  const uptime = Math.floor(rand() * 400 * 86400);
  const virtual = rand() < 0.85 ? 'kvm' : 'physical';
  const values = {
    aio_agent_version: '7.23.0',
    augeas: { version: '1.14.0' },
    datacenter: dc,
    disks: {
      vda: { model: 'QEMU HARDDISK', size: bytes(64 * GiB), size_bytes: 64 * GiB, type: 'hdd', vendor: 'QEMU' },
    },
    dmi: {
      bios: { release_date: '04/01/2014', vendor: 'SeaBIOS', version: '1.16.2-debian-1.16.2-1' },
      chassis: { type: 'Other' },
      manufacturer: 'QEMU',
      product: { name: 'Standard PC (Q35 + ICH9, 2009)', serial_number: hex(rand, 12), uuid: hex(rand, 32) },
    },
    domain,
    facterversion: '4.2.14',
    filesystems: 'ext4,tmpfs,vfat',
    fips_enabled: false,
    fqdn: certname,
    hostname,
    identity: { gid: 0, group: 'root', privileged: true, uid: 0, user: 'root' },
    ipaddress: ip,
    is_virtual: virtual !== 'physical',
    kernel: 'Linux',
    kernelmajversion: '6.1',
    kernelrelease: '6.1.0-28-amd64',
    kernelversion: '6.1.0',
    load_averages: { '15m': +(rand() * 2).toFixed(2), '1m': +(rand() * 4).toFixed(2), '5m': +(rand() * 3).toFixed(2) },
    memory: { swap: pool(rand, 2 * GiB), system: pool(rand, memory) },
    mountpoints: {
      '/': mount(rand, '/dev/vda1', 'ext4', 40 * GiB),
      '/boot/efi': mount(rand, '/dev/vda15', 'vfat', 124 * 1024 ** 2),
      '/var': mount(rand, '/dev/vda2', 'ext4', 20 * GiB),
    },
    networking: {
      domain,
      fqdn: certname,
      hostname,
      interfaces: {
        eth0: iface(ip, mac, `10.${DCS.indexOf(dc) + 1}.0.0`, '255.255.0.0', 1500),
        lo: iface('127.0.0.1', undefined, '127.0.0.0', '255.0.0.0', 65536),
      },
      ip,
      mac,
      mtu: 1500,
      netmask: '255.255.0.0',
      network: `10.${DCS.indexOf(dc) + 1}.0.0`,
      primary: 'eth0',
    },
    os: {
      architecture: 'amd64',
      distro: {
        codename: release.codename,
        description: `Debian GNU/Linux ${release.major} (${release.codename})`,
        id: 'Debian',
        release: { full: release.full, major: release.major, minor: release.minor },
      },
      family: 'Debian',
      hardware: 'x86_64',
      name: 'Debian',
      release: { full: release.full, major: release.major, minor: release.minor },
      selinux: { enabled: false },
    },
    path: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    processors: {
      count: cpus,
      isa: 'unknown',
      models: Array.from({ length: cpus }, () => model),
      physicalcount: 1,
      speed: '2.00 GHz',
    },
    puppetversion: '7.23.0',
    role,
    ruby: { platform: 'x86_64-linux-gnu', sitedir: '/usr/lib/ruby/vendor_ruby', version: '3.1.2' },
    ssh: {
      ed25519: {
        fingerprints: { sha1: `SSHFP 4 1 ${hex(rand, 40)}`, sha256: `SSHFP 4 2 ${hex(rand, 64)}` },
        key: `AAAAC3NzaC1lZDI1NTE5AAAAI${hex(rand, 43)}`,
        type: 'ssh-ed25519',
      },
      rsa: {
        fingerprints: { sha1: `SSHFP 1 1 ${hex(rand, 40)}`, sha256: `SSHFP 1 2 ${hex(rand, 64)}` },
        key: `AAAAB3NzaC1yc2EAAAADAQABAAABgQ${hex(rand, 64)}`,
        type: 'ssh-rsa',
      },
    },
    system_uptime: {
      days: Math.floor(uptime / 86400),
      hours: Math.floor(uptime / 3600),
      seconds: uptime,
      uptime: `${Math.floor(uptime / 86400)} days`,
    },
    timezone: 'UTC',
    trusted: { authenticated: 'remote', certname, domain, extensions: { pp_role: role }, hostname },
    uptime_days: Math.floor(uptime / 86400),
    virtual,
  };
  return { certname, environment, values };
}

/** Replace facts v5 commands (nfv's POST /v4/commands form), one a line, for nodes 0 .. n-1 at time `at`. */
export function factCommands(n: number, at = Date.UTC(2026, 10, 21), seed = 42): string[] {
  return Array.from({ length: n }, (_, k) => {
    const { certname, environment, values } = nodeFacts(k, seed);
    const payload = {
      certname,
      environment,
      producer_timestamp: new Date(at + k * 1000).toISOString(),
      producer: 'puppet-01.example.com',
      values,
    };
    return JSON.stringify({ command: 'replace facts', version: 5, payload });
  });
}
