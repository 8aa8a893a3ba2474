#!/usr/bin/perl
# The finding tags as an index of the tests (tests/system/tests-findable.sh).
#   finding-tags.pl SOURCE.c... -- TESTFILE...
# prints, one a line:
#   tested TAG FILE:LINE     the tag appears in a test file (as a whole tag)
#   untested TAG FILE:LINE   it appears in none
#   unknown FILE:LINE CALL   a finding whose tag is computed where no rule below
#                            says which tags it can be: teach %dynamic
# A tag is the string passed to report_finding (3rd argument) or
# report_cluster (2nd), or to the wrappers in %calls, which add a prefix.
use strict;
use warnings;

# wrapper => [tag argument (0-based), prefix, file it is defined for (last two components)]
my %calls = (
	report_finding => [2, '', ''],
	report_cluster => [1, '', ''],
	anomaly        => [2, 'rdma.', 'rdma/rdma.c'],
	disc_reject    => [1, 'discovery.record.', ''],
);

my (%src, %raw);    # file => text without comments, strings as \x01N\x02; its strings
my (@files, @tests);
my $in_tests = 0;
for (@ARGV) {
	if ($_ eq '--') { $in_tests = 1; next }
	push @{ $in_tests ? \@tests : \@files }, $_;
}

sub slurp { my $f = shift; open my $fh, '<', $f or die "$f: $!\n"; local $/; my $s = <$fh>; $s }
sub key { my @p = split m{/}, shift; join '/', @p[-2 .. -1] }    # modules/ssh/ca.c -> ssh/ca.c
# the one file whose last two components are K (rules name files so: the tree may move)
sub file { my $k = shift; my @f = grep { key($_) eq $k } @files; die "$k: " . @f . " files\n" if @f != 1; $f[0] }

for my $f (@files) {
	my $s = slurp($f);
	my @str;
	# strings to placeholders, char literals and comments out (newlines kept: line numbers)
	$s =~ s{("(?:[^"\\\n]|\\.)*")|('(?:[^'\\\n]|\\.)*')|(/\*.*?\*/)|(//[^\n]*)}{
		defined $1 ? do { push @str, substr($1, 1, -1); "\x01$#str\x02" }
		: defined $2 ? "' '" : do { my $c = $+; $c =~ tr/\n//cd; $c } }gse;
	$src{$f} = $s;
	$raw{$f} = \@str;
}
sub lits { my ($f, $text) = @_; map { $raw{$f}[$_] } $text =~ /\x01(\d+)\x02/g }
# the literals of file K that a regex on the placeholder text captures (one group)
sub grab { my ($k, $re) = @_; my $f = file($k); map { lits($f, $_) } $src{$f} =~ /$re/g }
sub matching { my ($k, $re) = @_; grep { /$re/ } @{ $raw{ file($k) } } }
my $S = qr/(\x01\d+\x02)/;

# Findings whose tag is computed: "file (last two components) expression" => the tags it can be.
my %dynamic = (
	# copies of findings already reported (and counted) elsewhere
	'base/report.c src->findings[i].tag'  => sub { () },
	'ssh/ca.c stale.findings[i].tag'      => sub { () },
	'rdma/rdma.c ftag'                    => sub { () },    # anomaly() adds "rdma."
	'discovery/run.c tag'                 => sub { () },    # disc_reject() adds the prefix
	# cert_judge() sets *tag
	'ssh/ca.c tag'                        => sub { grab('ssh/ca.c', qr/\*tag\s*=\s*$S/) },
	# admit_record()/admit_future() return the reason
	(map { my $k = $_; ("$k tag" => sub { map { "discovery.record.$_" } grab('discovery/admit.c', qr/return\s+$S/) }) }
	     'discovery/admit.c', 'discovery/etcd.c', 'discovery/shared.c'),
	# the rendezvous library's refusals (refuse(e, why, TAG, ...), e->refused = TAG), but "temp"
	'discovery/shared.c e->refused'       => sub {
		map { "discovery.record.$_" } grep { $_ ne 'temp' }
		    (grab('rendezvous/dir.c', qr/\brefuse\s*\([^,]*,[^,]*,\s*$S/),
		     map { grab($_, qr/refused\s*=\s*$S/) } 'rendezvous/dir.c', 'rendezvous/etcd.c') },
	'nfs/mount.c local_causes[i].tag'     => sub { grab('nfs/mount.c', qr/\{\s*NE_\w+\s*,\s*$S/) },
	'slurm/slurm.c d->missing_tag'        => sub { matching('slurm/slurm.c', qr/^slurm\.[a-z-]+\.missing$/) },
	# "<step>.mount.absent", the step being the one running (c->module)
	'base/mounts.c tag'                   => sub {
		my %step = ('rendezvous/dir.c' => 'discovery', 'sshkeys/userkeys.c' => 'ssh');
		my @t;
		for my $f (@files) {
			my $k = key($f);
			next if $k eq 'base/mounts.c' || $src{$f} !~ /\bmounts_require\s*\(/;
			my $s = $step{$k} // ($f =~ m{(?:^|/)modules/([a-z_]+)} ? $1 : undef);
			push @t, defined $s ? "$s.mount.absent" : "? $k calls mounts_require: name its step in %step";
		}
		@t },
);

my @found;    # [tag, where]
for my $f (@files) {
	my $k = key($f);
	my $s = $src{$f};
	my $re = join '|', keys %calls;
	while ($s =~ /\b($re)\s*\(/g) {
		my ($fn, $pos) = ($1, pos($s));
		my ($idx, $pre, $only) = @{ $calls{$fn} };
		next if $only && $k ne $only;
		my $where = "$f:" . (1 + (substr($s, 0, $pos) =~ tr/\n//));
		my ($depth, $arg, @args) = (0, '');
		for my $ch (split //, substr($s, $pos, 4000)) {
			if ($ch eq '(') { $depth++ }
			elsif ($ch eq ')') { if (!$depth--) { push @args, $arg; last } }
			elsif ($ch eq ',' && !$depth) { push @args, $arg; $arg = ''; next }
			$arg .= $ch;
		}
		next if @args <= $idx;
		my $a = $args[$idx];
		next if $a =~ /^\s*(const\s+)?(char|struct|enum)\b/;    # its declaration
		(my $e = $a) =~ s/\s+/ /g;
		$e =~ s/^ | $//g;
		my @t = map { "$pre$_" } lits($f, $a);
		if (!@t) {
			my $rule = $dynamic{"$k $e"};
			if (!$rule) { print "unknown $where $fn($e)\n"; next }
			@t = $rule->();
		}
		for (@t) {
			if (/^\? (.*)/) { print "unknown $where $1\n" } else { push @found, [$_, $where] }
		}
	}
}

my $tests = join "\n", map { slurp($_) } @tests;
my %seen;
for (sort { $a->[0] cmp $b->[0] } @found) {
	my ($t, $where) = @$_;
	next if $seen{$t}++;
	my $in = $tests =~ /(?<![a-z0-9.-])\Q$t\E(?![a-z0-9-]|\.[a-z0-9])/ ? 'tested' : 'untested';
	print "$in $t $where\n";
}
