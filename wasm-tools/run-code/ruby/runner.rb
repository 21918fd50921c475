# run-code for Ruby: the script build.mjs bakes into the command module's
# _start. Reads {language, code, stdin?, args?} as JSON on stdin, runs
# `code` at the top level as `ruby -e` would (file name "-e"), and prints
# {stdout, stderr, exit_code, result?} as one JSON line on the real stdout.
require 'json'
require 'stringio'

lambda do
  real_out = STDOUT
  input = JSON.parse(STDIN.read)
  out = StringIO.new(+'')
  err = StringIO.new(+'')
  # The snippet's STDIN/STDOUT/STDERR and $stdin/$stdout/$stderr are the
  # call's streams; the real ones are kept here for the answer.
  verbose = $VERBOSE
  $VERBOSE = nil
  Object.send(:remove_const, :STDIN)
  Object.send(:remove_const, :STDOUT)
  Object.send(:remove_const, :STDERR)
  Object.const_set(:STDIN, StringIO.new(input.fetch('stdin', '')))
  Object.const_set(:STDOUT, out)
  Object.const_set(:STDERR, err)
  $VERBOSE = verbose
  $stdin = STDIN
  $stdout = out
  $stderr = err
  ARGV.replace(input.fetch('args', []))

  exit_code = 0
  result = nil
  begin
    result = TOPLEVEL_BINDING.eval(input.fetch('code'), '-e', 1)
  rescue SystemExit => e
    exit_code = e.status
  rescue NoMemoryError
    # Fail the tool: its memory is at the cap, so Corral reports E_RESOURCE_EXHAUSTED.
    raise
  rescue Exception => e # rubocop:disable Lint/RescueException: what `ruby -e` reports, the answer reports
    exit_code = 1
    # Without this script's own frames (file "eval"), as `ruby -e` prints it.
    e.set_backtrace(e.backtrace.reject { |l| l.start_with?('eval:') || l.end_with?("in 'Kernel.eval'") }) if e.backtrace
    err.write(e.full_message(highlight: false))
  end
  answer = { 'stdout' => out.string, 'stderr' => err.string, 'exit_code' => exit_code }
  answer['result'] = result.inspect unless result.nil? || exit_code != 0
  [answer['stdout'], answer['stderr']].each { |s| s.force_encoding(Encoding::UTF_8).scrub!("\uFFFD") }
  real_out.write(JSON.generate(answer), "\n")
  real_out.flush
end.call
