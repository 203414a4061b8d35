# Loaded first by every Puppet run of test/clients (RUBYOPT=-r this file, fleet.ts): how Debian 12's Ruby 3.1 loads
# Puppet's files, and nothing of what Puppet does once they are loaded.

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
