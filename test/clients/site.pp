# The fleet of test/clients, one node block per behaviour the tests check. Facts set by the test (FACTER_*):
# nfv_dir, the test's folder (every file below is written there), and nfv_role.
$dir = $facts['nfv_dir']

# Changed on its first run, unchanged on its second.
node 'app1.example.com' {
  file { "${dir}/app1.conf": content => "port=8080\n" }
}

# Exports a file that web1 collects.
node 'db1.example.com' {
  @@file { "${dir}/exported-db1.example.com":
    content => "exported by db1.example.com\n",
    tag     => ['fleet'],
  }
  file { "${dir}/db1.conf": content => "db\n" }
}

# Fails: the parent folder does not exist, so the file after it is skipped.
node 'fail1.example.com' {
  file { "${dir}/missing/fail1.conf": content => "never\n" }
  file { "${dir}/fail1-after.conf":
    content => "after\n",
    require => File["${dir}/missing/fail1.conf"],
  }
}

# Run with --noop: the file would be written.
node 'noop1.example.com' {
  file { "${dir}/noop1.conf": content => "noop\n" }
}

# Deactivated with `puppet node deactivate` after its run.
node 'gone1.example.com' {
  notify { 'gone': message => 'about to be deactivated' }
}

# Collects the exported files and asks PuppetDB (PQL, and an AST) about the fleet while compiling.
node 'web1.example.com' {
  File <<| tag == 'fleet' |>>
  $failed = puppetdb_query('nodes[certname] { latest_report_status = "failed" order by certname }')
  $db = puppetdb_query('inventory[certname] { facts.nfv_role = "db" }')
  $active = puppetdb_query(['from', 'nodes', ['extract', ['certname']], ['order_by', ['certname']]])
  $names = [$failed, $db, $active].map |$rows| { $rows.map |$row| { $row['certname'] }.join(',') }
  notify { 'pql':
    message => "failed=${names[0]} db=${names[1]} active=${names[2]}",
    before  => File["${dir}/web1.conf"],
  }
  file { "${dir}/web1.conf": content => "web\n" }
}
