# Loaded first by every Puppet run of test/clients (RUBYOPT=-r this file, fleet.ts): how Debian 12's Ruby 3.1 loads
# Puppet's files, two changes, and none to what Puppet does once they are loaded.

# Puppet's autoloader appends each file it loads to $LOADED_FEATURES, about 40 times a run; in Ruby 3.1 the next
# require then rebuilds the feature index and resolves the real path of every file loaded so far again (Ruby bug
# #19246, fixed in 3.3): about 1,200 files each time, 340,000 failed readlink calls, 1.3 s of CPU a run. rb_provide,
# what require itself calls, appends the same path and adds it to the index instead of dropping the index.
require 'fiddle'
provide = Fiddle::Function.new(Fiddle::Handle::DEFAULT['rb_provide'], [Fiddle::TYPE_CONST_STRING], Fiddle::TYPE_VOID)
$LOADED_FEATURES.define_singleton_method(:<<) do |feature|
  provide.call(feature)
  self
end

# Each run compiled the same 1,150 files again (0.6 s of CPU): a run keeps each file's instructions in NFV_RUBY_CACHE
# (the checkout's .tap/ruby-iseq, one folder per Ruby build) under the file's path, time and size, and the later runs,
# of this test file or the next suite's, load them, as bootsnap's compile cache does.
cache = File.join(ENV.fetch('NFV_RUBY_CACHE'), "#{RUBY_VERSION}-#{RUBY_REVISION}-#{RUBY_PLATFORM}")
begin
  Dir.mkdir(cache)
rescue Errno::EEXIST
  nil
end
RubyVM::InstructionSequence.singleton_class.define_method(:load_iseq) do |path|
  stat = File.stat(path)
  kept = File.join(cache, "#{path.tr('/', '%')}@#{stat.mtime.to_i}.#{stat.mtime.nsec}-#{stat.size}")
  begin
    RubyVM::InstructionSequence.load_from_binary(File.binread(kept))
  rescue Errno::ENOENT
    iseq = RubyVM::InstructionSequence.compile_file(path)
    # Whole or absent, should two runs compile the same file at once.
    File.binwrite("#{kept}.#{Process.pid}", iseq.to_binary)
    File.rename("#{kept}.#{Process.pid}", kept)
    iseq
  end
end
