print('a phase of a test flow')
