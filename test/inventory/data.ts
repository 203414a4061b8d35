/** A small hand-written inventory: two nodes' catalogs, two reports. */
import { emptyInventory, replaceCatalog, storeReport, type InventoryData } from '../../src/inventory/ingest.js';

export const catalog = (certname: string, at: string, resources: object[], environment = 'DEV') => ({
  certname,
  version: '1',
  environment,
  producer_timestamp: at,
  resources,
});

export const web = {
  type: 'Service',
  title: 'nginx',
  exported: false,
  tags: ['web', 'service'],
  file: '/site.pp',
  line: 10,
  parameters: { ensure: 'running', port: 80, opts: { tls: true } },
};
export const user = {
  type: 'User',
  title: 'alice',
  exported: true,
  tags: ['users'],
  file: null,
  line: null,
  parameters: { uid: 1001, groups: ['wheel', 'dev'] },
};

export const report = (certname: string, at: string, resources: object[], more: object = {}) => ({
  certname,
  puppet_version: '8.1.0',
  report_format: 12,
  configuration_version: 'c1',
  start_time: at,
  end_time: at,
  producer_timestamp: at,
  transaction_uuid: null,
  environment: 'DEV',
  status: 'changed',
  noop: false,
  metrics: [{ category: 'time', name: 'total', value: 1.5 }],
  logs: null,
  resources,
  ...more,
});

export const changed = (title: string, status = 'success', extra: object = {}) => ({
  resource_type: 'Service',
  resource_title: title,
  timestamp: '2025-01-01T10:00:00Z',
  skipped: false,
  file: '/site.pp',
  line: 10,
  containment_path: ['Stage[main]', 'Web', `Service[${title}]`],
  events: [
    {
      status,
      timestamp: '2025-01-01T10:00:00Z',
      property: 'ensure',
      name: null,
      new_value: 'running',
      old_value: 'stopped',
      message: 'started',
      ...extra,
    },
  ],
});

export function sample(): InventoryData {
  const data = emptyInventory();
  replaceCatalog(data, catalog('a.example', '2025-01-01T00:00:00Z', [web, user]));
  replaceCatalog(data, catalog('b.example', '2025-01-01T00:00:00Z', [{ ...web, line: 20 }], 'PROD'));
  storeReport(
    data,
    report('a.example', '2025-01-01T10:00:00Z', [changed('nginx'), { ...changed('cron'), skipped: true }]),
    Date.parse('2025-01-01T10:05:00Z'),
  );
  storeReport(
    data,
    report('b.example', '2025-01-02T10:00:00Z', [changed('nginx', 'failure')], { environment: 'PROD' }),
    Date.parse('2025-01-02T10:05:00Z'),
  );
  return data;
}
